-- The built-in development inbox: every message the local stack's SMTP server
-- (deploy/local/src/dev-inbox.ts) accepts, read back by GET /api/dev/inbox.
-- Only used when SMTP_URL is not set; kept here so messages survive a restart.

create table dev_inbox (
  id uuid primary key,
  "to" text[] not null,
  subject text not null default '',
  text text not null default '',
  html text,
  received_at timestamptz not null default clock_timestamp()
);
create index dev_inbox_received_at on dev_inbox (received_at desc);
