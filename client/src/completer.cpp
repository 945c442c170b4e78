// completer.cpp: jobqueue::Completer, batched and fenced recording of outcomes.
#include "completer.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "backoff.hpp"
#include "commit_outcome.hpp"
#include "utf8.hpp"

namespace jobqueue {

Completer::Completer(Settings settings, ConnectionLog& connections, Count count, Report report)
    : settings_(std::move(settings)), connections_(connections), count_(std::move(count)), report_(std::move(report)) {}

Completer::~Completer() {
    try {
        stop(std::chrono::steady_clock::now());
    } catch (...) {
        // destructors never throw; unrecorded jobs come back after their lease
    }
}

void Completer::start() {
    if (thread_.joinable()) return;
    thread_ = std::thread([this] { loop(); });
}

void Completer::add(std::int64_t id, std::int64_t token, const Outcome& outcome) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (buffer_.empty()) oldest_ = std::chrono::steady_clock::now();
    buffer_.push_back({Claim{id, token}, outcome});
    // the thread wakes for the first outcome (to time the interval) and for a full batch
    if (buffer_.size() == 1 || buffer_.size() == static_cast<std::size_t>(settings_.batch_size))
        changed_.notify_all();
}

void Completer::stop(std::chrono::steady_clock::time_point deadline) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_ && !thread_.joinable()) return;
        stopping_ = true;
        give_up_at_ = deadline;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
    // never started (or added to after the thread ended): nothing records these
    std::vector<Finished> left;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        left.swap(buffer_);
    }
    if (!left.empty()) {
        Tally tally;
        tally.lost = static_cast<std::int64_t>(left.size());
        count_(tally);
    }
}

void Completer::loop() {
    try {
        ConnectionLog::Generation tag;
        (void)connection(tag);  // at once, so the first flush does not wait for it
    } catch (const ConnectionError&) {
        // the first flush connects, with retries
    }
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        changed_.wait(lock, [&] { return stopping_ || !buffer_.empty(); });
        if (buffer_.empty()) return;  // stopping, and everything recorded
        changed_.wait_until(lock, oldest_ + settings_.flush_interval, [&] {
            return stopping_ || buffer_.size() >= static_cast<std::size_t>(settings_.batch_size);
        });
        std::vector<Finished> batch;
        batch.swap(buffer_);
        lock.unlock();
        flush(batch);
        lock.lock();
    }
}

// One call per (kind, delay, error), completions first (the common case),
// in chunks of batch_size; then the counters are told what was recorded.
void Completer::flush(std::vector<Finished>& batch) {
    using Key = std::tuple<Outcome::Kind, std::optional<std::chrono::milliseconds>, std::string>;
    std::map<Key, Group> groups;
    for (auto& finished : batch) {
        const Outcome& o = finished.outcome;
        // a completion carries no delay or text; the server refuses invalid UTF-8 (22021)
        const bool done = o.kind() == Outcome::Kind::done;
        Key key{o.kind(), done ? std::nullopt : o.delay(), done ? "" : utf8::valid(o.message())};
        auto [it, made] = groups.try_emplace(key);
        if (made) it->second = Group{o.kind(), std::get<1>(key), std::get<2>(key), {}};
        it->second.claims.push_back(finished.claim);
    }
    Tally tally;
    for (auto& [key, whole] : groups) {
        for (std::size_t from = 0; from < whole.claims.size(); from += settings_.batch_size) {
            Group chunk{whole.kind, whole.delay, whole.error, {}};
            const std::size_t to = std::min(whole.claims.size(), from + settings_.batch_size);
            chunk.claims.assign(whole.claims.begin() + from, whole.claims.begin() + to);
            auto acted = record(chunk, tally);
            const std::int64_t recorded = acted ? static_cast<std::int64_t>(acted->size()) : 0;
            tally.lost += static_cast<std::int64_t>(chunk.claims.size()) - recorded;
            switch (chunk.kind) {
                case Outcome::Kind::done: tally.completed += recorded; break;
                case Outcome::Kind::retry: tally.retried += recorded; break;
                case Outcome::Kind::fail: tally.failed += recorded; break;
            }
        }
    }
    count_(tally);
}

std::vector<std::int64_t> Completer::send(Client& client, const Group& group) {
    switch (group.kind) {
        case Outcome::Kind::done: return client.complete_many(group.claims);
        case Outcome::Kind::retry: return client.release_many(group.claims, group.delay, group.error);
        case Outcome::Kind::fail: return client.fail_many(group.claims, group.error);
    }
    return {};
}

Client& Completer::connection(ConnectionLog::Generation& tag) {
    if (!client_ || !client_->healthy()) {
        tag = connections_.generation();
        if (!client_) client_.emplace(settings_.connection);
        else client_->reconnect();
        opened_ = tag;
    }
    tag = opened_;
    return *client_;
}

bool Completer::pause(std::chrono::milliseconds span) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (std::chrono::steady_clock::now() >= give_up_at_) return false;
    // woken early by stop(), which may bring the deadline forward
    changed_.wait_for(lock, span, [&] { return std::chrono::steady_clock::now() >= give_up_at_; });
    return true;
}

// One transaction: BEGIN, note its id, the batch call, COMMIT. A connection
// lost before the COMMIT rolled it back: send it again. A COMMIT whose answer
// was lost is in doubt: the ids the call returned are kept, and the server is
// asked whether the transaction committed. Sending again is safe in every
// case, since each pair is fenced by its token; asking first is what keeps
// the jobs the first try did record from being counted lost. After a
// failover the new primary may not know the transaction at all: an id
// beyond its own ("in the future", 22023) never committed there.
std::optional<std::vector<std::int64_t>> Completer::record(const Group& group, Tally& tally) {
    struct InDoubt {
        std::int64_t transaction;
        std::vector<std::int64_t> acted;
    };
    std::optional<InDoubt> in_doubt;
    Backoff backoff(std::chrono::milliseconds(100), settings_.max_reconnect_delay);
    for (;;) {
        ConnectionLog::Generation tag = 0;
        try {
            Client& client = connection(tag);
            if (in_doubt) {
                const CommitOutcome outcome = commit_outcome(client, in_doubt->transaction);
                if (outcome == CommitOutcome::committed) {
                    connections_.working();
                    return std::move(in_doubt->acted);
                }
                if (outcome == CommitOutcome::in_progress) {
                    // the old session has not ended yet: ask again shortly
                    if (!pause(backoff.next())) return std::nullopt;
                    continue;
                }
                in_doubt.reset();  // rolled back (or forgotten): send it again
            }
            client.execute("BEGIN");
            const std::int64_t transaction = client.transaction_id();
            auto acted = send(client, group);
            try {
                client.execute("COMMIT");
            } catch (const InDoubtError&) {
                in_doubt = InDoubt{transaction, std::move(acted)};
                throw;
            }
            connections_.working();
            return acted;
        } catch (const ConnectionError& e) {
            ++tally.reconnects;
            connections_.lost(e.what(), tag);
            if (!pause(backoff.next())) return std::nullopt;
        } catch (const Error& e) {
            try {
                if (client_ && client_->healthy()) client_->execute("ROLLBACK");
            } catch (const Error&) {
                // a connection lost now rolled the transaction back as well
            }
            if (dynamic_cast<const RetryableError*>(&e) != nullptr) {
                if (!pause(backoff.next())) return std::nullopt;
                continue;  // 40001 / 40P01: rolled back, try again
            }
            // e.g. a negative Outcome::retry_in delay (22023): these jobs come
            // back when their lease runs out
            report_(group.kind == Outcome::Kind::done ? "completing jobs" : "recording job outcomes", e);
            return std::nullopt;
        }
    }
}

}  // namespace jobqueue
