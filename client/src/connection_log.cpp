// connection_log.cpp: jobqueue::ConnectionLog, one line per outage.
#include "connection_log.hpp"

#include <cstdio>

namespace jobqueue {

ConnectionLog::ConnectionLog(Sink sink) : sink_(std::move(sink)) {}

ConnectionLog::Generation ConnectionLog::generation() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return generation_;
}

void ConnectionLog::lost(const std::string& error, Generation opened) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (outage_) {
        down_.insert(std::this_thread::get_id());
        return;
    }
    // the connection predates the last outage, which has ended: its loss
    // was reported then; the thread reopens it, and only a failure of that
    // (tagged with the current generation) is news
    if (opened < generation_) return;
    ++generation_;
    outage_ = true;
    in_outage_ = true;
    began_ = std::chrono::steady_clock::now();
    down_ = {std::this_thread::get_id()};
    sink_("jobqueue worker: connection lost (" + error + "); reconnecting");
}

void ConnectionLog::working() {
    // every successful call comes here: most find no outage, without the lock
    if (!in_outage_.load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!outage_ || down_.erase(std::this_thread::get_id()) == 0 || !down_.empty()) return;
    outage_ = false;
    in_outage_ = false;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", seconds);
    sink_(std::string("jobqueue worker: reconnected after ") + text + " s");
}

}  // namespace jobqueue
