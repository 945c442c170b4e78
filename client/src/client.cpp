// client.cpp: jobqueue::Client, one statement per operation.
#include "jobqueue/client.hpp"

#include <poll.h>

#include <strings.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "pg.hpp"

namespace jobqueue {

struct Client::Owned {
    pg::ConnPtr conn;
};

namespace {

// Prints the server's notices on stderr as libpq does, except the one a
// server sends each session as it shuts down or is killed (57P01, 57P02,
// 57P03: "terminating connection due to ..."): the ConnectionError of the
// next call says the same, and a worker logs it once per outage, not once
// per connection.
void print_notice(void*, const PGresult* notice) {
    const char* state = PQresultErrorField(notice, PG_DIAG_SQLSTATE);
    if (state != nullptr && std::strncmp(state, "57P0", 4) == 0) return;
    std::fputs(PQresultErrorMessage(notice), stderr);
}

pg::ConnPtr open_connection(const std::string& conninfo) {
    pg::ConnPtr conn(PQconnectdb(conninfo.c_str()));
    if (!conn) throw ConnectionError("jobqueue: out of memory creating a connection");
    if (PQstatus(conn.get()) != CONNECTION_OK) {
        std::string message = PQerrorMessage(conn.get());
        while (!message.empty() && message.back() == '\n') message.pop_back();
        throw ConnectionError("jobqueue: cannot connect: " + message, "08001");
    }
    PQsetNoticeReceiver(conn.get(), print_notice, nullptr);
    return conn;
}

// libpq's messages end in newlines and may span lines: make them one line.
std::string trimmed(const char* message) {
    std::string out;
    bool space = false;
    for (const char* p = message ? message : ""; *p; ++p) {
        if (*p == '\n' || *p == '\t' || *p == ' ') {
            space = !out.empty();
            continue;
        }
        if (space) out += ' ';
        space = false;
        out += *p;
    }
    return out;
}

// The server's error as one line: its message, then its detail in brackets.
std::string server_message(const PGresult* r, PGconn* conn) {
    if (r == nullptr) return trimmed(PQerrorMessage(conn));
    const char* primary = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    if (primary == nullptr) return trimmed(PQresultErrorMessage(r));
    std::string out = primary;
    if (const char* detail = PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL)) out += " (" + std::string(detail) + ")";
    return out;
}

// Whether a failed call lost the connection. An error with no SQLSTATE came
// from libpq, not the server: the connection is gone even when libpq has not
// noticed yet (the first call after a server restart fails that way); 08xxx
// and 57P0x (the server shutting down) say so themselves.
bool connection_lost(const char* state) {
    return state == nullptr || std::strncmp(state, "57P", 3) == 0 || std::strncmp(state, "08", 2) == 0;
}

// Whether the server refused a write because it is a standby: SQLSTATE
// 25006 (read-only transaction) from a server that reports in_hot_standby
// (PostgreSQL 14 and later send it, and its change at promotion). A
// connection that reaches a standby (the primary of before a failover, or
// a host picked without target_session_attrs=read-write) is of no use for a
// queue; a read-only transaction of the caller's own gives 25006 too, but on
// a server that is not a standby, and stays an ordinary error.
bool refused_by_standby(const char* state, PGconn* conn) {
    if (state == nullptr || std::strcmp(state, "25006") != 0) return false;
    const char* standby = PQparameterStatus(conn, "in_hot_standby");
    return standby != nullptr && std::strcmp(standby, "on") == 0;
}

// A time column is sent as microseconds since the epoch, exactly.
std::string micros(const std::string& column) {
    return "(extract(epoch from " + column + ") * 1000000)::int8";
}

// A parameter holding a NUL byte: libpq would send only the part before it
// (a queue "normalq\0x" would reach the server as "normalq"), so no string
// with one ever leaves the client. 22021 is the server's own code for a
// character its encoding cannot hold (it refuses U+0000 in text likewise).
[[noreturn]] void throw_nul_argument(const char* statement, std::size_t position, const std::string& value) {
    std::string before = value.substr(0, value.find('\0'));
    if (before.size() > 40) before = before.substr(0, 40) + "...";
    throw InvalidArgument("jobqueue: argument $" + std::to_string(position) + " of " + statement +
                              " contains a NUL byte (after \"" + before + "\"): strings sent to the server cannot hold one",
                          "22021");
}

}  // namespace

// A query result; rows are read as text.
class Client::Result {
public:
    explicit Result(pg::ResultPtr r) : r_(std::move(r)) {}
    [[nodiscard]] int rows() const { return PQntuples(r_.get()); }
    [[nodiscard]] bool null(int row, int col) const { return PQgetisnull(r_.get(), row, col); }
    [[nodiscard]] const char* text(int row, int col) const { return PQgetvalue(r_.get(), row, col); }
    [[nodiscard]] std::int64_t integer(int row, int col) const { return pg::to_int(text(row, col)); }
    [[nodiscard]] bool boolean(int row, int col) const { return text(row, col)[0] == 't'; }

private:
    pg::ResultPtr r_;
};

std::optional<PoolerMode> parse_pooler_mode(const std::string& text) {
    if (text == "detect") return PoolerMode::detect;
    if (text == "session") return PoolerMode::session;
    if (text == "transaction") return PoolerMode::transaction;
    return std::nullopt;
}

PoolerMode pooler_mode_or_environment(PoolerMode mode) {
    if (mode != PoolerMode::detect) return mode;
    const char* env = std::getenv("JOBQUEUE_POOLER");
    if (env == nullptr || *env == '\0') return mode;
    auto chosen = parse_pooler_mode(env);
    if (!chosen)
        throw InvalidArgument(std::string("jobqueue: JOBQUEUE_POOLER must be detect, session or transaction, not \"") +
                              env + "\"");
    return *chosen;
}

Client::Client(ClientOptions options)
    : owned_(new Owned), options_(std::move(options)), prepared_(new pg::PreparedStatements) {
    options_.pooler = pooler_mode_or_environment(options_.pooler);
    owned_->conn = open_connection(options_.conninfo);
    conn_ = owned_->conn.get();
}

Client::Client(PGconn* borrowed, std::string schema, PoolerMode pooler)
    : conn_(borrowed), prepared_(new pg::PreparedStatements) {
    if (borrowed == nullptr) throw InvalidArgument("jobqueue: Client::borrow needs a connection");
    options_.schema = std::move(schema);
    options_.pooler = pooler_mode_or_environment(pooler);
}

Client Client::borrow(PGconn* connection, std::string schema, PoolerMode pooler) {
    return Client(connection, std::move(schema), pooler);
}

Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;
Client::~Client() = default;

bool Client::healthy() const { return conn_ != nullptr && !broken_ && PQstatus(conn_) == CONNECTION_OK; }

void Client::reconnect() {
    if (!owned_) throw ConnectionError("jobqueue: a borrowed connection cannot be reconnected");
    owned_->conn = open_connection(options_.conninfo);
    conn_ = owned_->conn.get();
    prepared_->forget();
    transaction_pooled_.reset();  // a detected pooler is looked for again
    listening_ = false;
    broken_ = false;
}

std::string Client::fn(const char* name) const {
    if (options_.schema.empty()) return name;
    char* quoted = PQescapeIdentifier(conn_, options_.schema.c_str(), options_.schema.size());
    if (quoted == nullptr) throw InvalidArgument("jobqueue: bad schema name: " + options_.schema);
    std::string out = std::string(quoted) + "." + name;
    PQfreemem(quoted);
    return out;
}

// Run one statement, named or unnamed (see PoolerMode). A statement that
// writes, sent outside a transaction block, commits by itself: losing the
// connection before its answer leaves its outcome unknown, which is
// reported as InDoubtError.
Client::Result Client::call(const char* statement, const std::string& sql,
                            const std::vector<std::optional<std::string>>& params, bool writes) {
    if (!healthy()) throw ConnectionError("jobqueue: the connection is broken", "08006");
    bool autocommit = PQtransactionStatus(conn_) == PQTRANS_IDLE;

    std::vector<const char*> values;
    values.reserve(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        const auto& p = params[i];
        // libpq takes each parameter as a C string: a NUL would cut it there
        // and the statement would run on the part before it
        if (p && p->find('\0') != std::string::npos) throw_nul_argument(statement, i + 1, *p);
        values.push_back(p ? p->c_str() : nullptr);
    }
    pg::Sent sent = transaction_pooled() ? pg::run_unnamed(conn_, sql, values)
                                         : prepared_->run(conn_, statement, sql, values, !owned_);
    ExecStatusType status = sent.result ? PQresultStatus(sent.result.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) return Result(std::move(sent.result));

    const PGresult* r = sent.result.get();
    const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    if (connection_lost(state)) {
        broken_ = true;
        std::string message = "jobqueue: connection lost during " + std::string(statement) + ": " +
                              trimmed(PQerrorMessage(conn_));
        if (sent.executed && writes && autocommit) throw InDoubtError(message, "08007");
        throw ConnectionError(message, state ? state : "08006");
    }
    if (refused_by_standby(state, conn_)) standby_refused(server_message(r, conn_));
    throw_error("jobqueue: " + server_message(r, conn_), state ? state : "");
}

// The server is a standby: nothing was written. An owned connection is
// dropped, so that reconnect() lets libpq pick a host again (the primary,
// with target_session_attrs=read-write); a borrowed one stays the caller's.
void Client::standby_refused(const std::string& message) {
    if (owned_) broken_ = true;
    throw ConnectionError("jobqueue: the server is a standby: " + message, "25006");
}

bool Client::transaction_pooled() {
    if (transaction_pooled_) return *transaction_pooled_;
    if (options_.pooler != PoolerMode::detect) {
        transaction_pooled_ = options_.pooler == PoolerMode::transaction;
        return *transaction_pooled_;
    }
    // Undecided (e.g. a borrowed connection in an aborted transaction): this
    // call goes unnamed, which works everywhere, and the next one asks again.
    transaction_pooled_ = pg::behind_pooler(conn_);
    return transaction_pooled_.value_or(true);
}

void Client::execute(const std::string& sql) {
    if (!healthy()) throw ConnectionError("jobqueue: the connection is broken", "08006");
    if (sql.find('\0') != std::string::npos)
        throw InvalidArgument("jobqueue: the SQL contains a NUL byte (libpq would cut it there)", "22021");
    pg::ResultPtr r(PQexec(conn_, sql.c_str()));
    ExecStatusType status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return;
    const char* state = r ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
    if (connection_lost(state)) {
        broken_ = true;
        std::string message = "jobqueue: connection lost during \"" + sql + "\": " + trimmed(PQerrorMessage(conn_));
        bool committing = strncasecmp(sql.c_str(), "COMMIT", 6) == 0 || strncasecmp(sql.c_str(), "END", 3) == 0;
        if (committing) throw InDoubtError(message, "08007");
        throw ConnectionError(message, state ? state : "08006");
    }
    if (refused_by_standby(state, conn_)) standby_refused(server_message(r.get(), conn_));
    throw_error("jobqueue: " + server_message(r.get(), conn_), state ? state : "");
}

std::int64_t Client::transaction_id() {
    auto r = call("jobqueue_transaction_id", "SELECT pg_catalog.pg_current_xact_id()::text::int8", {}, false);
    return r.integer(0, 0);
}

std::optional<std::string> Client::transaction_status(std::int64_t id) {
    auto r = call("jobqueue_transaction_status", "SELECT pg_catalog.pg_xact_status($1::text::xid8)",
                  {std::to_string(id)}, false);
    if (r.null(0, 0)) return std::nullopt;
    return std::string(r.text(0, 0));
}

// ---------------------------------------------------------------- producing

std::int64_t Client::push(const std::string& name, const nlohmann::json& payload, const PushOptions& o) {
    // the flow-control arguments exist from extension 1.5 on: only sent when one is set
    if (o.uses_flow_control()) {
        auto r = call("jobqueue_push_flow",
                      "SELECT " + fn("queue_push") +
                          "($1, $2::jsonb, $3, $4::interval, $5::int4, $6, $7::int4, $8::timestamptz, $9, $10, "
                          "$11::int8[], $12)",
                      {name, payload.dump(), pg::param(o.queue), pg::param(o.delay), pg::param(o.priority),
                       pg::param(o.unique_key), pg::param(o.max_attempts), pg::param(o.deadline),
                       pg::param(o.concurrency_key),
                       o.on_duplicate ? pg::Param(to_string(*o.on_duplicate)) : std::nullopt,
                       o.after.empty() ? std::nullopt : pg::Param(pg::int_array_text(o.after)),
                       o.after_failed ? pg::Param(to_string(*o.after_failed)) : std::nullopt},
                      true);
        return r.integer(0, 0);
    }
    auto r = call("jobqueue_push",
                  "SELECT " + fn("queue_push") +
                      "($1, $2::jsonb, $3, $4::interval, $5::int4, $6, $7::int4, $8::timestamptz)",
                  {name, payload.dump(), pg::param(o.queue), pg::param(o.delay), pg::param(o.priority),
                   pg::param(o.unique_key), pg::param(o.max_attempts), pg::param(o.deadline)},
                  true);
    return r.integer(0, 0);
}

std::vector<std::int64_t> Client::push_many(const std::vector<NewJob>& jobs) {
    nlohmann::json array = nlohmann::json::array();
    for (const auto& job : jobs) array.push_back(push_many_element(job));
    auto r = call("jobqueue_push_many", "SELECT " + fn("queue_push_many") + "($1::jsonb)", {array.dump()}, true);
    return pg::int_array(r.text(0, 0));
}

// ---------------------------------------------------------------- working

std::vector<Job> Client::reserve(const ReserveOptions& o) {
    const std::string columns = "SELECT id, queue, name, payload, attempts, max_attempts, priority, token, " +
                                micros("reserved_until") + ", " + micros("created_at") +
                                ", coalesce(last_error, ''), " + micros("deadline") + " FROM " + fn("queue_reserve");
    std::vector<std::optional<std::string>> params = {
        pg::param(o.queues), pg::param(o.lease), o.worker, pg::param(o.max_jobs)};
    // the wait argument exists from extension 1.2 on: only sent when asked for
    if (o.wait) params.push_back(pg::interval_text(*o.wait));
    auto r = o.wait ? call("jobqueue_reserve_wait", columns + "($1::text[], $2::interval, $3, $4::int4, $5::interval)",
                           params, true)
                    : call("jobqueue_reserve", columns + "($1::text[], $2::interval, $3, $4::int4)", params, true);
    std::vector<Job> jobs;
    jobs.reserve(r.rows());
    for (int i = 0; i < r.rows(); ++i) {
        Job j;
        j.id = r.integer(i, 0);
        j.queue = r.text(i, 1);
        j.name = r.text(i, 2);
        j.payload = nlohmann::json::parse(r.text(i, 3));
        j.attempts = static_cast<int>(r.integer(i, 4));
        j.max_attempts = static_cast<int>(r.integer(i, 5));
        j.priority = static_cast<int>(r.integer(i, 6));
        j.token = r.integer(i, 7);
        j.reserved_until = pg::micros_time(r.text(i, 8));
        j.created_at = pg::micros_time(r.text(i, 9));
        j.last_error = r.text(i, 10);
        if (!r.null(i, 11)) j.deadline = pg::micros_time(r.text(i, 11));
        jobs.push_back(std::move(j));
    }
    return jobs;
}

std::optional<Job> Client::reserve_one(const std::vector<std::string>& queues,
                                       std::optional<std::chrono::milliseconds> lease, const std::string& worker) {
    auto jobs = reserve(ReserveOptions{queues, lease, worker, 1, std::nullopt});
    if (jobs.empty()) return std::nullopt;
    return std::move(jobs.front());
}

bool Client::complete(std::int64_t id, std::int64_t token) {
    auto r = call("jobqueue_delete", "SELECT " + fn("queue_delete") + "($1::int8, $2::int8)",
                  {std::to_string(id), std::to_string(token)}, true);
    return r.boolean(0, 0);
}

namespace {
std::pair<std::string, std::string> claim_arrays(const std::vector<Claim>& claims) {
    std::vector<std::int64_t> ids, tokens;
    for (const auto& c : claims) {
        ids.push_back(c.id);
        tokens.push_back(c.token);
    }
    return {pg::int_array_text(ids), pg::int_array_text(tokens)};
}
}  // namespace

std::vector<std::int64_t> Client::complete_many(const std::vector<Claim>& claims) {
    auto [ids, tokens] = claim_arrays(claims);
    auto r = call("jobqueue_delete_many", "SELECT " + fn("queue_delete_many") + "($1::int8[], $2::int8[])",
                  {ids, tokens}, true);
    return pg::int_array(r.text(0, 0));
}

bool Client::release(std::int64_t id, std::int64_t token, std::optional<std::chrono::milliseconds> delay,
                     const std::string& error) {
    auto r = call("jobqueue_release", "SELECT " + fn("queue_release") + "($1::int8, $2::int8, $3::interval, $4)",
                  {std::to_string(id), std::to_string(token), pg::param(delay), error},
                  true);
    return r.boolean(0, 0);
}

std::vector<std::int64_t> Client::release_many(const std::vector<Claim>& claims,
                                               std::optional<std::chrono::milliseconds> delay,
                                               const std::string& error) {
    auto [ids, tokens] = claim_arrays(claims);
    auto r = call("jobqueue_release_many",
                  "SELECT " + fn("queue_release_many") + "($1::int8[], $2::int8[], $3::interval, $4)",
                  {ids, tokens, pg::param(delay), error},
                  true);
    return pg::int_array(r.text(0, 0));
}

bool Client::fail(std::int64_t id, std::int64_t token, const std::string& error) {
    auto r = call("jobqueue_fail", "SELECT " + fn("queue_fail") + "($1::int8, $2::int8, $3)",
                  {std::to_string(id), std::to_string(token), error}, true);
    return r.boolean(0, 0);
}

std::vector<std::int64_t> Client::fail_many(const std::vector<Claim>& claims, const std::string& error) {
    auto [ids, tokens] = claim_arrays(claims);
    auto r = call("jobqueue_fail_many", "SELECT " + fn("queue_fail_many") + "($1::int8[], $2::int8[], $3)",
                  {ids, tokens, error}, true);
    return pg::int_array(r.text(0, 0));
}

bool Client::extend(std::int64_t id, std::int64_t token, std::chrono::milliseconds lease) {
    auto r = call("jobqueue_extend", "SELECT " + fn("queue_extend") + "($1::int8, $2::int8, $3::interval)",
                  {std::to_string(id), std::to_string(token), pg::interval_text(lease)}, true);
    return r.boolean(0, 0);
}

// ---------------------------------------------------------------- looking

std::int64_t Client::pending(const std::optional<std::string>& queue) {
    auto r = call("jobqueue_pending", "SELECT " + fn("queue_pending") + "($1)", {queue}, false);
    return r.integer(0, 0);
}

std::vector<QueueStats> Client::stats() {
    auto r = call("jobqueue_stats", "SELECT queue, pending, delayed, reserved, total FROM " + fn("queue_stats") + "()",
                  {}, false);
    std::vector<QueueStats> out;
    for (int i = 0; i < r.rows(); ++i)
        out.push_back({r.text(i, 0), r.integer(i, 1), r.integer(i, 2), r.integer(i, 3), r.integer(i, 4)});
    return out;
}

std::vector<QueueInfo> Client::queues() {
    auto r = call("jobqueue_list",
                  "SELECT queue, pending, delayed, reserved, total, paused, "
                  "(extract(epoch from default_lease) * 1000)::int8, notify FROM " +
                      fn("queue_list") + "()",
                  {}, false);
    std::vector<QueueInfo> out;
    for (int i = 0; i < r.rows(); ++i) {
        QueueInfo info;
        info.stats = {r.text(i, 0), r.integer(i, 1), r.integer(i, 2), r.integer(i, 3), r.integer(i, 4)};
        info.paused = r.boolean(i, 5);
        if (!r.null(i, 6)) info.default_lease = pg::millis(r.text(i, 6));
        info.notify = r.boolean(i, 7);
        out.push_back(std::move(info));
    }
    return out;
}

std::int64_t Client::failed_count() {
    auto r = call("jobqueue_failed_count", "SELECT " + fn("queue_failed_count") + "()", {}, false);
    return r.integer(0, 0);
}

namespace {
// The columns of a failed row, in the order failed_rows() reads them.
std::string failed_columns() {
    return "id, queue, name, payload, priority, attempts, max_attempts, error, " + micros("failed_at") + ", " +
           micros("created_at");
}
}  // namespace

std::vector<FailedJob> Client::failed_rows(const char* statement, const std::string& arguments,
                                           const std::vector<std::optional<std::string>>& params) {
    auto r = call(statement, "SELECT " + failed_columns() + " FROM " + fn("queue_failed_rows") + arguments, params,
                  false);
    std::vector<FailedJob> out;
    for (int i = 0; i < r.rows(); ++i) {
        FailedJob f;
        f.id = r.integer(i, 0);
        f.queue = r.text(i, 1);
        f.name = r.text(i, 2);
        f.payload = nlohmann::json::parse(r.text(i, 3));
        f.priority = static_cast<int>(r.integer(i, 4));
        f.attempts = static_cast<int>(r.integer(i, 5));
        f.max_attempts = static_cast<int>(r.integer(i, 6));
        f.error = r.text(i, 7);
        f.failed_at = pg::micros_time(r.text(i, 8));
        f.created_at = pg::micros_time(r.text(i, 9));
        out.push_back(std::move(f));
    }
    return out;
}

std::vector<FailedJob> Client::failed(std::optional<int> limit, const std::optional<std::string>& queue) {
    return failed_rows("jobqueue_failed_rows", "($1::int4, $2)", {pg::param(limit), queue});
}

std::optional<FailedJob> Client::failed_job(std::int64_t id) {
    auto rows = failed_rows("jobqueue_failed_row", "(1, NULL, $1::int8)", {std::to_string(id)});
    if (rows.empty()) return std::nullopt;
    return std::move(rows.front());
}

// ---------------------------------------------------------------- browsing

namespace {
// A nullable text column.
std::optional<std::string> text_or_none(const char* text, bool null) {
    if (null) return std::nullopt;
    return std::string(text);
}
}  // namespace

// Each row as one JSON object, so that the statement's result type is the
// same before and after the extension's update to 1.5 (which adds the
// estimate columns): a prepared statement whose result changed would fail
// until the connection is made again.
std::vector<QueueOverview> Client::overview(std::optional<int> count_cap) {
    auto r = call("jobqueue_overview",
                  "SELECT pg_catalog.to_jsonb(o) || pg_catalog.jsonb_build_object('oldest_pending_us', " +
                      micros("o.oldest_pending_at") + ") FROM " + fn("queue_overview") + "($1::int4) o",
                  {pg::param(count_cap)}, false);
    auto estimate = [](const nlohmann::json& row, const char* field) -> std::optional<std::int64_t> {
        auto it = row.find(field);
        if (it == row.end() || it->is_null()) return std::nullopt;
        return it->get<std::int64_t>();
    };
    std::vector<QueueOverview> out;
    for (int i = 0; i < r.rows(); ++i) {
        auto row = nlohmann::json::parse(r.text(i, 0));
        QueueOverview o;
        o.queue = row.at("queue").get<std::string>();
        o.paused = row.at("paused").get<bool>();
        o.pending = row.at("pending").get<std::int64_t>();
        o.delayed = row.at("delayed").get<std::int64_t>();
        o.reserved = row.at("reserved").get<std::int64_t>();
        o.failed = row.at("failed").get<std::int64_t>();
        o.counts_capped = row.at("counts_capped").get<bool>();
        if (!row.at("oldest_pending_us").is_null())
            o.oldest_pending_at = TimePoint(std::chrono::duration_cast<Clock::duration>(
                std::chrono::microseconds(row.at("oldest_pending_us").get<std::int64_t>())));
        o.pending_estimate = estimate(row, "pending_estimate");
        o.delayed_estimate = estimate(row, "delayed_estimate");
        o.reserved_estimate = estimate(row, "reserved_estimate");
        o.failed_estimate = estimate(row, "failed_estimate");
        o.estimates = row.contains("pending_estimate");
        out.push_back(std::move(o));
    }
    return out;
}

namespace {
// The columns queue_jobs_page and queue_job share, in the order
// read_summary reads them.
std::string summary_columns() {
    return "id, name, state, priority, attempts, max_attempts, " + micros("available_at") + ", reserved_by, " +
           micros("reserved_until") + ", unique_key, " + micros("deadline") + ", " + micros("created_at");
}

// Reads the columns of summary_columns(), the first of row i (a template,
// since the Result class is the client's own).
template <typename Result>
JobSummary read_summary(const Result& r, int i) {
    JobSummary j;
    j.id = r.integer(i, 0);
    j.name = r.text(i, 1);
    j.state = r.text(i, 2);
    j.priority = static_cast<int>(r.integer(i, 3));
    j.attempts = static_cast<int>(r.integer(i, 4));
    j.max_attempts = static_cast<int>(r.integer(i, 5));
    if (!r.null(i, 6)) j.available_at = pg::micros_time(r.text(i, 6));
    j.reserved_by = text_or_none(r.text(i, 7), r.null(i, 7));
    if (!r.null(i, 8)) j.reserved_until = pg::micros_time(r.text(i, 8));
    j.unique_key = text_or_none(r.text(i, 9), r.null(i, 9));
    if (!r.null(i, 10)) j.deadline = pg::micros_time(r.text(i, 10));
    j.created_at = pg::micros_time(r.text(i, 11));
    return j;
}

}  // namespace

std::vector<JobSummary> Client::jobs_page(const std::string& queue, const JobsPageOptions& o) {
    auto r = call("jobqueue_jobs_page",
                  "SELECT " + summary_columns() + " FROM " + fn("queue_jobs_page") + "($1, $2, $3::int8, $4::int4)",
                  {queue, pg::param(o.state), pg::param(o.after_id), pg::param(o.max_rows)}, false);
    std::vector<JobSummary> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back(read_summary(r, i));
    return out;
}

std::optional<JobDetail> Client::job(std::int64_t id) {
    auto r = call("jobqueue_job",
                  "SELECT " + summary_columns() + ", queue, payload, coalesce(last_error, ''), " + micros("failed_at") +
                      " FROM " + fn("queue_job") + "($1::int8)",
                  {std::to_string(id)}, false);
    if (r.rows() == 0) return std::nullopt;
    JobDetail d;
    d.summary = read_summary(r, 0);
    d.queue = r.text(0, 12);
    d.payload = nlohmann::json::parse(r.text(0, 13));
    d.last_error = r.text(0, 14);
    if (!r.null(0, 15)) d.failed_at = pg::micros_time(r.text(0, 15));
    return d;
}

std::vector<Lease> Client::leases(std::optional<int> max_rows) {
    auto r = call("jobqueue_leases",
                  "SELECT worker, queue, id, name, attempts, " + micros("reserved_until") + " FROM " +
                      fn("queue_leases") + "($1::int4)",
                  {pg::param(max_rows)}, false);
    std::vector<Lease> out;
    for (int i = 0; i < r.rows(); ++i)
        out.push_back({r.text(i, 0), r.text(i, 1), r.integer(i, 2), r.text(i, 3), static_cast<int>(r.integer(i, 4)),
                       pg::micros_time(r.text(i, 5))});
    return out;
}

std::vector<QueueCounters> Client::counters() {
    auto r = call("jobqueue_counters",
                  "SELECT queue, pushed, claimed, completed, released, retried, failed, expired FROM " +
                      fn("queue_counters") + "()",
                  {}, false);
    std::vector<QueueCounters> out;
    for (int i = 0; i < r.rows(); ++i)
        out.push_back({r.text(i, 0), r.integer(i, 1), r.integer(i, 2), r.integer(i, 3), r.integer(i, 4),
                       r.integer(i, 5), r.integer(i, 6), r.integer(i, 7)});
    return out;
}

void Client::reset_counters() { call("jobqueue_counters_reset", "SELECT " + fn("queue_counters_reset") + "()", {}, true); }

// ---------------------------------------------------------------- failed jobs

std::int64_t Client::retry_failed(std::optional<std::int64_t> id, std::optional<int> max_attempts) {
    auto r = call("jobqueue_retry_failed", "SELECT " + fn("queue_retry_failed") + "($1::int8, $2::int4)",
                  {pg::param(id), pg::param(max_attempts)}, true);
    return r.integer(0, 0);
}

std::int64_t Client::forget_failed(std::int64_t id) {
    auto r = call("jobqueue_forget_failed_id", "SELECT " + fn("queue_forget_failed") + "(id => $1::int8)",
                  {std::to_string(id)}, true);
    return r.integer(0, 0);
}

std::int64_t Client::forget_failed_before(TimePoint before) {
    auto r = call("jobqueue_forget_failed_before", "SELECT " + fn("queue_forget_failed") + "(before => $1::timestamptz)",
                  {format_time(before)}, true);
    return r.integer(0, 0);
}

std::int64_t Client::forget_all_failed() {
    auto r = call("jobqueue_forget_failed_all", "SELECT " + fn("queue_forget_failed") + "(all_rows => true)", {}, true);
    return r.integer(0, 0);
}

// ---------------------------------------------------------------- administration

bool Client::cancel(std::int64_t id, bool force) {
    auto r = call("jobqueue_cancel", "SELECT " + fn("queue_cancel") + "($1::int8, $2::bool)",
                  {std::to_string(id), force ? "true" : "false"}, true);
    return r.boolean(0, 0);
}

std::int64_t Client::clear(const std::string& queue) {
    auto r = call("jobqueue_clear", "SELECT " + fn("queue_clear") + "($1)", {queue}, true);
    return r.integer(0, 0);
}

void Client::pause(const std::string& queue) {
    call("jobqueue_pause", "SELECT " + fn("queue_pause") + "($1)", {queue}, true);
}

void Client::resume(const std::string& queue) {
    call("jobqueue_resume", "SELECT " + fn("queue_resume") + "($1)", {queue}, true);
}

void Client::set_default_lease(const std::string& queue, std::optional<std::chrono::milliseconds> lease) {
    call("jobqueue_set_default_lease", "SELECT " + fn("queue_set_default_lease") + "($1, $2::interval)",
         {queue, pg::param(lease)}, true);
}

void Client::set_notify(const std::string& queue, bool enabled) {
    call("jobqueue_set_notify", "SELECT " + fn("queue_set_notify") + "($1, $2::bool)",
         {queue, enabled ? "true" : "false"}, true);
}

// ---------------------------------------------------------------- flow control

void Client::set_concurrency(const std::string& queue, const std::string& key_prefix, int max_running) {
    call("jobqueue_concurrency_set", "SELECT " + fn("queue_concurrency_set") + "($1, $2, $3::int4)",
         {queue, key_prefix, std::to_string(max_running)}, true);
}

bool Client::remove_concurrency(const std::string& queue, const std::string& key_prefix) {
    auto r = call("jobqueue_concurrency_remove", "SELECT " + fn("queue_concurrency_remove") + "($1, $2)",
                  {queue, key_prefix}, true);
    return r.boolean(0, 0);
}

std::vector<ConcurrencyLimit> Client::concurrency_limits() {
    auto r = call("jobqueue_concurrency_list",
                  "SELECT queue, key_prefix, max_running FROM " + fn("queue_concurrency_list") + "()", {}, false);
    std::vector<ConcurrencyLimit> out;
    for (int i = 0; i < r.rows(); ++i)
        out.push_back({r.text(i, 0), r.text(i, 1), static_cast<int>(r.integer(i, 2))});
    return out;
}

std::vector<ConcurrencyKey> Client::concurrency_keys(const std::optional<std::string>& queue) {
    auto r = call("jobqueue_concurrency_keys",
                  "SELECT queue, concurrency_key, max_running, running, waiting FROM " +
                      fn("queue_concurrency_keys") + "($1)",
                  {queue}, false);
    std::vector<ConcurrencyKey> out;
    for (int i = 0; i < r.rows(); ++i)
        out.push_back({r.text(i, 0), r.text(i, 1), static_cast<int>(r.integer(i, 2)),
                       static_cast<int>(r.integer(i, 3)), r.integer(i, 4)});
    return out;
}

void Client::set_rate_limit(const std::string& queue, int max_claims, std::chrono::milliseconds per) {
    call("jobqueue_rate_limit_set", "SELECT " + fn("queue_rate_limit_set") + "($1, $2::int4, $3::interval)",
         {queue, std::to_string(max_claims), pg::interval_text(per)}, true);
}

bool Client::remove_rate_limit(const std::string& queue) {
    auto r = call("jobqueue_rate_limit_remove", "SELECT " + fn("queue_rate_limit_remove") + "($1)", {queue}, true);
    return r.boolean(0, 0);
}

std::vector<RateLimit> Client::rate_limits() {
    auto r = call("jobqueue_rate_limits",
                  "SELECT queue, max_claims, (extract(epoch from per) * 1000)::int8, " + micros("next_slot") +
                      " FROM " + fn("queue_rate_limits") + "()",
                  {}, false);
    std::vector<RateLimit> out;
    for (int i = 0; i < r.rows(); ++i) {
        RateLimit l;
        l.queue = r.text(i, 0);
        l.max_claims = static_cast<int>(r.integer(i, 1));
        l.per = pg::millis(r.text(i, 2));
        if (!r.null(i, 3)) l.next_slot = pg::micros_time(r.text(i, 3));
        out.push_back(std::move(l));
    }
    return out;
}

std::optional<TimePoint> Client::rate_limit_next(const std::string& queue) {
    auto r = call("jobqueue_rate_limit_next", "SELECT " + micros(fn("queue_rate_limit_next") + "($1)"), {queue},
                  false);
    if (r.null(0, 0)) return std::nullopt;
    return pg::micros_time(r.text(0, 0));
}

std::optional<std::chrono::milliseconds> Client::rate_limit_wait(const std::vector<std::string>& queues) {
    auto r = call("jobqueue_rate_limit_wait",
                  "SELECT CASE WHEN pg_catalog.bool_and(slot IS NOT NULL) THEN GREATEST(0, pg_catalog.ceil("
                  "extract(epoch from pg_catalog.min(slot) - (pg_catalog.clock_timestamp() + "
                  // the extension's clock: shifted by jobqueue.clock_offset (tests travel in time with it)
                  "coalesce(NULLIF(pg_catalog.current_setting('jobqueue.clock_offset', true), ''), "
                  "'0')::interval)) * 1000))::int8 END "
                  "FROM pg_catalog.unnest(coalesce($1::text[], ARRAY['default'])) q(name), LATERAL " +
                      fn("queue_rate_limit_next") + "(q.name) slot",
                  {pg::param(queues)}, false);
    if (r.null(0, 0)) return std::nullopt;
    return std::chrono::milliseconds(r.integer(0, 0));
}

std::vector<BlockedJobs> Client::blocked(const std::optional<std::string>& queue) {
    auto r = call("jobqueue_blocked",
                  "SELECT queue, waiting_for_key, waiting_for_parents FROM " + fn("queue_blocked") + "($1)", {queue},
                  false);
    std::vector<BlockedJobs> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back({r.text(i, 0), r.integer(i, 1), r.integer(i, 2)});
    return out;
}

// ---------------------------------------------------------------- schedules

TimePoint Client::schedule_set(const Schedule& s) {
    auto r = call("jobqueue_schedule_set",
                  "SELECT " + micros(fn("queue_schedule_set") +
                                     "($1, $2, $3, $4::jsonb, $5, $6::int4, $7::int4, $8, $9::bool, $10::bool)"),
                  {s.name, s.cron, s.job_name, s.payload.dump(), pg::param(s.queue), pg::param(s.priority),
                   pg::param(s.max_attempts), pg::param(s.time_zone), pg::param(s.enabled), pg::param(s.catch_up)},
                  true);
    return pg::micros_time(r.text(0, 0));
}

bool Client::schedule_remove(const std::string& name) {
    auto r = call("jobqueue_schedule_remove", "SELECT " + fn("queue_schedule_remove") + "($1)", {name}, true);
    return r.boolean(0, 0);
}

std::vector<Schedule> Client::schedules() {
    auto r = call("jobqueue_schedule_list",
                  "SELECT name, cron, job_name, payload, queue, priority, max_attempts, time_zone, enabled, catch_up, " +
                      micros("next_due") + ", " + micros("last_window") + " FROM " + fn("queue_schedule_list") + "()",
                  {}, false);
    std::vector<Schedule> out;
    for (int i = 0; i < r.rows(); ++i) {
        Schedule s;
        s.name = r.text(i, 0);
        s.cron = r.text(i, 1);
        s.job_name = r.text(i, 2);
        s.payload = nlohmann::json::parse(r.text(i, 3));
        s.queue = r.text(i, 4);
        s.priority = static_cast<int>(r.integer(i, 5));
        s.max_attempts = static_cast<int>(r.integer(i, 6));
        s.time_zone = r.text(i, 7);
        s.enabled = r.boolean(i, 8);
        s.catch_up = r.boolean(i, 9);
        if (!r.null(i, 10)) s.next_due = pg::micros_time(r.text(i, 10));
        if (!r.null(i, 11)) s.last_window = pg::micros_time(r.text(i, 11));
        out.push_back(std::move(s));
    }
    return out;
}

std::vector<Tick> Client::tick() {
    auto r = call("jobqueue_tick", "SELECT schedule, " + micros("due_at") + ", job_id FROM " + fn("queue_tick") + "()",
                  {}, true);
    std::vector<Tick> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back({r.text(i, 0), pg::micros_time(r.text(i, 1)), r.integer(i, 2)});
    return out;
}

// ---------------------------------------------------------------- wake-ups

std::optional<std::string> Client::wait(std::chrono::milliseconds timeout) {
    // the LISTEN would stay behind on whichever server connection ran it
    if (transaction_pooled())
        throw InvalidArgument(
            "jobqueue: wait() cannot LISTEN through a transaction pooler; wait in reserve() instead "
            "(ReserveOptions::wait), or choose PoolerMode::session for a session-pooling pooler");
    if (!listening_) {
        execute("LISTEN jobqueue");
        listening_ = true;
    }
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (PQconsumeInput(conn_) == 0)
            throw ConnectionError("jobqueue: connection lost while waiting: " + trimmed(PQerrorMessage(conn_)),
                                  "08006");
        if (PGnotify* note = PQnotifies(conn_)) {
            std::string queue = note->extra ? note->extra : "";
            PQfreemem(note);
            return queue;
        }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return std::nullopt;
        pollfd pfd{PQsocket(conn_), POLLIN, 0};
        if (pfd.fd < 0) throw ConnectionError("jobqueue: connection has no socket", "08006");
        int rc = ::poll(&pfd, 1, static_cast<int>(left.count()));
        if (rc < 0 && errno != EINTR) throw ConnectionError(std::string("jobqueue: poll: ") + std::strerror(errno));
    }
}

}  // namespace jobqueue
