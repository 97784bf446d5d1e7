-- Each project's auth settings as the projector folds them from
-- AuthSettingsUpdated events: only what differs from the defaults.
alter table projects add column auth_settings jsonb not null default '{}';
