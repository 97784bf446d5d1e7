-- Each project's data API settings as the projector folds them from
-- RestSettingsUpdated events: only what differs from the defaults.
alter table projects add column rest_settings jsonb not null default '{}';
