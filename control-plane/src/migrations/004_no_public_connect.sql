-- Only the platform's own role connects to the platform database: tenant
-- logins (every project's owner, apply and data-API logins live in the same
-- cluster when it is shared) get no CONNECT or TEMPORARY through PUBLIC.
-- Run by a role that does not own the database, this revokes nothing (a
-- warning, not an error).
do $$
begin
  execute format('revoke connect, temporary on database %I from public', current_database());
end
$$;
