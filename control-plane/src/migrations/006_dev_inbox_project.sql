-- The project a dev inbox message was sent for (the data plane's
-- X-Baseplane-Project header): GET /api/dev/inbox shows an operator the
-- messages of their teams' projects only. Messages stored before, or sent by
-- anything else, have none and are shown to nobody.
alter table dev_inbox add column project_id uuid;
create index dev_inbox_project on dev_inbox (project_id, received_at desc);
