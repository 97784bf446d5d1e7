/** What every `/rest/v1/auth` handler works with. */
import type { Logger } from 'pino';
import type { ProjectDirectory } from '../directory/project-directory';
import type { ProjectMailers } from '../mail/project-mailers';
import type { OwnerPools } from '../tenants/owner-pools';
import type { AccessTokens } from './access-tokens';
import type { AfterAnswer } from './after-answer';
import type { CodeBook } from './codes';
import type { AuthHousekeeping } from './housekeeping';
import type { RefreshTokens } from './refresh-tokens';

export interface AuthDependencies {
  directory: ProjectDirectory;
  tenants: OwnerPools;
  tokens: AccessTokens;
  codes: CodeBook;
  refreshTokens: RefreshTokens;
  mailers: ProjectMailers;
  /** Where a code mailed after the answer reports a failure (nobody else is left to hear it). */
  log: Logger;
  /** Work left behind by answers, finished before the replica stops. */
  afterAnswer: AfterAnswer;
  /** Told of every write that adds rows to `auth`, so that the ones no longer needed go now and then. */
  housekeeping: AuthHousekeeping;
}
