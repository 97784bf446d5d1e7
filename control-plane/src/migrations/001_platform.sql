-- The platform database: the event store, its subscriptions, platform accounts
-- and the read models projected from the events.

create table events (
  global_position bigint primary key,
  event_id uuid not null unique,
  stream_id text not null,
  stream_version int not null,
  type text not null,
  data jsonb not null,
  metadata jsonb not null,
  recorded_at timestamptz not null default now(),
  unique (stream_id, stream_version)
);
create sequence events_position_seq owned by events.global_position;

create table streams (
  stream_id text primary key,
  version int not null check (version > 0)
);

create table subscription_checkpoints (
  subscription_id text primary key,
  position bigint not null,
  updated_at timestamptz not null default now()
);

-- Appends events to a stream at an expected version: null = any, 0 = the stream
-- must not exist, N = the stream must be at version N. A mismatch raises
-- SQLSTATE BPV01 and writes nothing.
create function append_to_stream(p_stream_id text, p_expected_version int, p_events jsonb)
returns table (stream_version int, global_position bigint)
language plpgsql as $$
declare
  v_current int;
begin
  if jsonb_typeof(p_events) <> 'array' or jsonb_array_length(p_events) = 0 then
    raise exception 'append_to_stream needs a non-empty array of events' using errcode = '22023';
  end if;
  -- Appends are serialised so that global positions are handed out in commit
  -- order: a reader that has seen position N never later finds a committed
  -- event below N. Management commands are rare enough for one lane.
  perform pg_advisory_xact_lock(7011001);
  select s.version into v_current from streams s where s.stream_id = p_stream_id;
  v_current := coalesce(v_current, 0);
  if p_expected_version is not null and v_current <> p_expected_version then
    raise exception 'stream % is at version %, expected %', p_stream_id, v_current, p_expected_version
      using errcode = 'BPV01';
  end if;

  return query
  insert into events as e (global_position, event_id, stream_id, stream_version, type, data, metadata)
  select nextval('events_position_seq'), (x.ev->>'eventId')::uuid, p_stream_id, v_current + x.ord::int,
         x.ev->>'type', x.ev->'data', x.ev->'metadata'
  from jsonb_array_elements(p_events) with ordinality as x(ev, ord)
  order by x.ord
  returning e.stream_version, e.global_position;

  insert into streams as s (stream_id, version)
  values (p_stream_id, v_current + jsonb_array_length(p_events))
  on conflict (stream_id) do update set version = excluded.version;

  perform pg_notify('baseplane_events', currval('events_position_seq')::text);
end $$;

-- Platform accounts are plain records, not event-sourced: they are the
-- operators who issue commands, not what the commands change.
create table accounts (
  id uuid primary key,
  email text not null,
  name text not null,
  password_hash text not null,
  created_at timestamptz not null default now()
);
create unique index accounts_email_key on accounts (lower(email));

create table teams (
  id uuid primary key,
  name text not null,
  created_at timestamptz not null default now()
);

create table team_members (
  team_id uuid not null references teams on delete cascade,
  account_id uuid not null references accounts on delete cascade,
  role text not null check (role in ('owner', 'admin', 'member')),
  primary key (team_id, account_id)
);
create index team_members_account on team_members (account_id);

create table platform_refresh_tokens (
  token_hash text primary key,
  account_id uuid not null references accounts on delete cascade,
  expires_at timestamptz not null,
  revoked_at timestamptz
);

-- Read models, written only by the projector from the event stream.
create table projects (
  id uuid primary key,
  name text not null,
  team_id uuid not null,
  status text not null,
  status_detail text,
  database_name text not null,
  anon_key_hash text not null,
  anon_key_cipher text not null,
  service_key_hash text not null,
  service_key_cipher text not null,
  version int not null,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index projects_team on projects (team_id);
create unique index projects_anon_key on projects (anon_key_hash);
create unique index projects_service_key on projects (service_key_hash);

create table operations (
  id uuid primary key,
  project_id uuid not null,
  command text not null,
  status text not null check (status in ('pending', 'running', 'succeeded', 'failed')),
  workflow_id text,
  stream_version int not null,
  started_at timestamptz not null,
  finished_at timestamptz,
  error jsonb
);
create index operations_project on operations (project_id, started_at);

-- Ledger of the side effects workers applied to tenants: one row per step of
-- an event, written once the effect exists. `adopted` marks an effect found
-- already in place by a retry (its first attempt died before writing here).
create table activity_ledger (
  project_id uuid not null,
  stream_version int not null,
  step text not null,
  attempt int not null,
  adopted boolean not null,
  performed_at timestamptz not null default now(),
  primary key (project_id, stream_version, step)
);
