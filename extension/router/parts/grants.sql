-- ------------------------------------------------------------ privileges on every shard
CREATE FUNCTION @extschema@.router_grant_all(role text, tier text)
RETURNS SETOF integer
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT 1 AS router_grant_all FROM (SELECT @extschema@.queue_grant(role, tier)) g;
$$;
CREATE FUNCTION @extschema@.queue_grant(role text, tier text)
RETURNS void
LANGUAGE sql
AS $$ SELECT pg_catalog.count(*) FROM @extschema@.router_grant_all(role, tier) $$;
COMMENT ON FUNCTION @extschema@.queue_grant(text, text) IS
    'jobqueue_router: queue_grant on every shard (the role must exist there)';

CREATE FUNCTION @extschema@.router_revoke_all(role text, tier text)
RETURNS SETOF integer
LANGUAGE plproxy
AS $$
    CLUSTER 'jobqueue'; RUN ON ALL;
    SELECT 1 AS router_revoke_all FROM (SELECT @extschema@.queue_revoke(role, tier)) g;
$$;
CREATE FUNCTION @extschema@.queue_revoke(role text, tier text)
RETURNS void
LANGUAGE sql
AS $$ SELECT pg_catalog.count(*) FROM @extschema@.router_revoke_all(role, tier) $$;
COMMENT ON FUNCTION @extschema@.queue_revoke(text, text) IS
    'jobqueue_router: queue_revoke on every shard';

