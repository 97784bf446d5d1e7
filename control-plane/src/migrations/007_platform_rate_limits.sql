-- Rate-limit counters of the operators' sign-ups and failed logins
-- (accounts/login-limits.ts), shared by every control-plane replica: one row
-- per bucket and fixed window, as the tenants' auth.rate_limits.
create table platform_rate_limits (
  bucket text primary key,
  window_start timestamptz not null,
  hits int not null
);
create index platform_rate_limits_window_start on platform_rate_limits (window_start);
