// sampler.cpp: the thread that reads queue_counters().
#include "sampler.hpp"

namespace jobqueue::dashboard {

CounterSampler::CounterSampler(ClientPool& pool, std::chrono::milliseconds interval, std::size_t history)
    : pool_(pool), interval_(interval), history_(history) {}

CounterSampler::~CounterSampler() { stop(); }

void CounterSampler::start() { thread_ = std::thread([this] { run(); }); }

void CounterSampler::stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void CounterSampler::run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
        lock.unlock();
        sample_once();
        lock.lock();
        wake_.wait_for(lock, interval_, [&] { return stopping_; });
    }
}

void CounterSampler::sample_once() {
    std::vector<QueueCounters> counters;
    std::optional<CountersProblem> problem;
    try {
        auto client = pool_.acquire();
        counters = client->counters();
    } catch (const Error& e) {
        problem = CountersProblem{e.what(), e.sqlstate()};
    } catch (const std::exception& e) {
        problem = CountersProblem{e.what(), ""};
    }
    auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    problem_ = problem;
    if (problem)
        history_.gap();
    else
        history_.add(now, counters);
}

std::vector<RatePoint> CounterSampler::rates() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return history_.rates();
}

std::optional<CountersProblem> CounterSampler::problem() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return problem_;
}

}  // namespace jobqueue::dashboard
