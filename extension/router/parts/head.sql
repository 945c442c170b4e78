/*
 * jobqueue_router 1.0: jobqueue's SQL API in a router database, each call
 * sent with PL/Proxy to the shard databases that run jobqueue (1.5 or
 * later, each made a shard with queue_shard_setup(n)).
 *
 * The cluster is the PL/Proxy SQL/MED server named "jobqueue": partition
 * pN is shard N (its queue_shard() must be N), a power of two of them.
 * The router is installed into the schema that holds jobqueue on the
 * shards: PL/Proxy calls the function of the same schema and name there.
 *
 * Where a call goes:
 *  - by queue: a queue's routing key is its name up to the first ':' (the
 *    whole name when it has none), its shard hashtext(key) & (shards - 1),
 *    so "tenant42:mail" and "tenant42:billing" live on the shard that
 *    queue_shard_for_key('tenant42') names for the tenant's own data;
 *  - by id: a job id carries its shard in the bits from 48 up;
 *  - to every shard (RUN ON ALL), the results merged in the order one
 *    server gives.
 * PL/Proxy runs each remote call in autocommit mode on its shard: a push
 * through the router commits on the shard at once, whatever the router's
 * transaction does.  A push that must commit or roll back with the
 * application's data is made on the shard itself (queue_shard_for).
 *
 * Arguments that the shards would refuse are sent as they are to one
 * shard (partition 0, or the one the call names), so that the error and
 * its SQLSTATE are the shard's own.  Privileges are the shards': PL/Proxy
 * connects to them as the calling user.
 *
 * Internal functions are named router_*: the public ones have jobqueue's
 * names, arguments and defaults.
 */
\echo Use "CREATE EXTENSION jobqueue_router" to load this file. \quit

