// rates.cpp: rates between readings of cumulative counters.
#include "rates.hpp"

#include <chrono>

namespace jobqueue::dashboard {

namespace {
// The increase of a cumulative counter from `before` to `after`.
std::int64_t increase(std::int64_t before, std::int64_t after) { return after >= before ? after - before : after; }
}  // namespace

void RateHistory::add(TimePoint at, const std::vector<QueueCounters>& counters) {
    Reading reading{at, {}, gap_};
    gap_ = false;
    for (const auto& c : counters) reading.totals[c.queue] = {c.pushed, c.completed};
    readings_.push_back(std::move(reading));
    while (readings_.size() > capacity_) readings_.pop_front();
}

void RateHistory::gap() { gap_ = true; }

std::vector<RatePoint> RateHistory::rates() const {
    std::vector<RatePoint> out;
    for (std::size_t i = 1; i < readings_.size(); ++i) {
        const Reading& before = readings_[i - 1];
        const Reading& after = readings_[i];
        double seconds = std::chrono::duration<double>(after.at - before.at).count();
        if (after.after_gap || seconds <= 0) continue;
        std::int64_t pushed = 0, completed = 0;
        for (const auto& [queue, totals] : after.totals) {
            auto found = before.totals.find(queue);
            std::pair<std::int64_t, std::int64_t> start = found == before.totals.end()
                                                              ? std::pair<std::int64_t, std::int64_t>{0, 0}
                                                              : found->second;
            pushed += increase(start.first, totals.first);
            completed += increase(start.second, totals.second);
        }
        out.push_back({after.at, pushed / seconds, completed / seconds});
    }
    return out;
}

}  // namespace jobqueue::dashboard
