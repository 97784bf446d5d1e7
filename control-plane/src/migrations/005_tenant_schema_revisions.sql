-- Which revision of the tenant schema (workers/src/tenant-schema.ts) each
-- project's database is known to hold, written by the worker when it
-- provisions or upgrades one: a starting worker connects only to the
-- databases behind. The database's own baseplane_meta.schema_revision is the
-- truth; a project with no row here is checked there.
create table tenant_schema_revisions (
  project_id uuid primary key,
  revision int not null,
  recorded_at timestamptz not null default now()
);
