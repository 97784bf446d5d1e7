/**
 * The command-bus side of projects: one Nest command carrying any project
 * command, one handler running the decider loop on the project's stream.
 */
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { Inject } from '@nestjs/common';
import { projectStreamId, type ProjectCommand, type ProjectEvent } from '@baseplane/contracts';
import { EventStore } from '../event-store/event-store';
import { handleCommand, type CommandContext, type HandledCommand } from '../domain/handle-command';
import * as project from '../domain/project';

export class ExecuteProjectCommand {
  constructor(readonly command: ProjectCommand, readonly context: CommandContext) {}
}

@CommandHandler(ExecuteProjectCommand)
export class ExecuteProjectCommandHandler implements ICommandHandler<ExecuteProjectCommand, HandledCommand<project.ProjectState>> {
  constructor(@Inject(EventStore) private readonly store: EventStore) {}

  execute({ command, context }: ExecuteProjectCommand): Promise<HandledCommand<project.ProjectState>> {
    return handleCommand<ProjectCommand, ProjectEvent, project.ProjectState>(
      this.store,
      project,
      projectStreamId(command.data.projectId),
      command,
      context,
    );
  }
}
