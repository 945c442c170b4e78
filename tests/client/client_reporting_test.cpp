// client_reporting_test.cpp: live tests of jobqueue::Client:
// reading the queues: pending, stats, settings, the overview, job pages,
// leases and the counters.
// The fixture and the helpers are in client_fixture.hpp.
#include "client_fixture.hpp"

// ================================================================= reporting

// pending counts due jobs of one queue, or of all queues.
TEST_F(ClientTest, Pending) {
    auto qa = queue();
    auto qb = queue();
    EXPECT_EQ(client.pending(qa), 0);
    // Lock the table against other sessions' writes so the total is exact.
    client.execute("BEGIN");
    client.execute("LOCK TABLE queue_jobs IN SHARE ROW EXCLUSIVE MODE");
    std::int64_t all0 = client.pending();
    (void)client.push("n", {}, on(qa));
    (void)client.push("n", {}, on(qa));
    auto delayed = on(qa);
    delayed.delay = 1h;
    (void)client.push("n", {}, delayed);
    (void)client.push("n", {}, on(qb));
    EXPECT_EQ(client.pending(qa), 2);
    EXPECT_EQ(client.pending(qb), 1);
    EXPECT_EQ(client.pending(), all0 + 3);
    EXPECT_EQ(client.pending(std::nullopt), all0 + 3);
    client.execute("COMMIT");
    // A held job is not pending.
    auto job = client.reserve_one({qa});
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(client.pending(qa), 1);
}

// stats partitions each queue's backlog; expired leases count as pending.
TEST_F(ClientTest, Stats) {
    auto base = queue();
    std::string qa = base + "_a", qb = base + "_b";
    queues_.push_back(qa);
    queues_.push_back(qb);
    auto prio = [&](int p) {
        auto o = on(qa);
        o.priority = p;
        return o;
    };
    (void)client.push("pending", {}, prio(0));
    auto delayed = prio(0);
    delayed.delay = 5h;
    (void)client.push("delayed", {}, delayed);
    std::int64_t short_lease = client.push("held1", {}, prio(10));
    std::int64_t long_lease = client.push("held2", {}, prio(9));
    auto j1 = client.reserve_one({qa}, 1h);
    auto j2 = client.reserve_one({qa}, 10h);
    ASSERT_TRUE(j1 && j2);
    ASSERT_EQ(j1->id, short_lease);
    ASSERT_EQ(j2->id, long_lease);
    (void)client.push("other", {}, on(qb));

    auto find = [&](const std::vector<jobqueue::QueueStats>& all, const std::string& q) -> std::ptrdiff_t {
        for (size_t i = 0; i < all.size(); ++i)
            if (all[i].queue == q) return static_cast<std::ptrdiff_t>(i);
        return -1;
    };
    auto s = client.stats();
    auto ia = find(s, qa), ib = find(s, qb);
    ASSERT_GE(ia, 0);
    ASSERT_GE(ib, 0);
    EXPECT_LT(ia, ib);  // ordered by queue
    EXPECT_EQ(s[ia].pending, 1);
    EXPECT_EQ(s[ia].delayed, 1);
    EXPECT_EQ(s[ia].reserved, 2);
    EXPECT_EQ(s[ia].total, 4);
    EXPECT_EQ(s[ib].pending, 1);
    EXPECT_EQ(s[ib].total, 1);
    for (size_t i = 1; i < s.size(); ++i) EXPECT_LT(s[i - 1].queue, s[i].queue);

    client.execute("SET jobqueue.clock_offset = '2 hours'");
    s = client.stats();
    ia = find(s, qa);
    ASSERT_GE(ia, 0);
    EXPECT_EQ(s[ia].pending, 2);
    EXPECT_EQ(s[ia].delayed, 1);
    EXPECT_EQ(s[ia].reserved, 1);
    EXPECT_EQ(s[ia].total, 4);
}

// queues() lists settings beside the backlog.
TEST_F(ClientTest, QueuesShowSettings) {
    auto base = queue();
    std::string with_jobs = base + "_jobs", with_settings = base + "_set";
    queues_.push_back(with_jobs);
    queues_.push_back(with_settings);
    (void)client.push("n", {}, on(with_jobs));
    auto delayed = on(with_jobs);
    delayed.delay = 1h;
    (void)client.push("n", {}, delayed);
    client.pause(with_settings);
    client.set_default_lease(with_settings, 90s);
    client.set_notify(with_settings, false);

    auto find = [&](const std::string& q) -> std::optional<jobqueue::QueueInfo> {
        for (auto& info : client.queues())
            if (info.stats.queue == q) return info;
        return std::nullopt;
    };
    auto a = find(with_jobs);
    ASSERT_TRUE(a.has_value());
    EXPECT_FALSE(a->paused);
    EXPECT_FALSE(a->default_lease.has_value());
    EXPECT_TRUE(a->notify);
    EXPECT_EQ(a->stats.pending, 1);
    EXPECT_EQ(a->stats.delayed, 1);
    EXPECT_EQ(a->stats.reserved, 0);
    EXPECT_EQ(a->stats.total, 2);

    auto b = find(with_settings);
    ASSERT_TRUE(b.has_value());
    EXPECT_TRUE(b->paused);
    ASSERT_TRUE(b->default_lease.has_value());
    EXPECT_EQ(b->default_lease->count(), 90000);
    EXPECT_FALSE(b->notify);
    EXPECT_EQ(b->stats.total, 0);
    EXPECT_EQ(b->stats.pending, 0);

    client.resume(with_settings);
    client.set_default_lease(with_settings, std::nullopt);
    client.set_notify(with_settings, true);
    b = find(with_settings);
    ASSERT_TRUE(b.has_value());
    EXPECT_FALSE(b->paused);
    EXPECT_FALSE(b->default_lease.has_value());
    EXPECT_TRUE(b->notify);

    auto all = client.queues();
    for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].stats.queue, all[i].stats.queue);
}

// =============================================================== browsing (1.4)

namespace {
std::optional<jobqueue::QueueOverview> overview_of(Client& c, const std::string& q, std::optional<int> cap = {}) {
    for (auto& row : c.overview(cap))
        if (row.queue == q) return row;
    return std::nullopt;
}
}  // namespace

// overview() counts each state of a queue, its failed rows and its oldest
// pending job, and stops counting at the cap.
TEST_F(ClientTest, OverviewCountsEveryState) {
    auto q = queue();
    auto doomed = on(q);
    doomed.max_attempts = 1;
    doomed.priority = 9;
    (void)client.push("doomed", {}, doomed);
    auto d = client.reserve_one({q}, 1h);
    ASSERT_TRUE(d);
    ASSERT_TRUE(client.fail(d->id, d->token, "no"));
    auto held = on(q);
    held.priority = 5;
    (void)client.push("held", {}, held);
    ASSERT_TRUE(client.reserve_one({q}, 1h));
    TimePoint before = server_now();
    (void)client.push("p1", {}, on(q));
    (void)client.push("p2", {}, on(q));
    auto later = on(q);
    later.delay = 1h;
    (void)client.push("later", {}, later);
    client.pause(q);

    auto o = overview_of(client, q);
    ASSERT_TRUE(o.has_value());
    EXPECT_TRUE(o->paused);
    EXPECT_EQ(o->pending, 2);
    EXPECT_EQ(o->delayed, 1);
    EXPECT_EQ(o->reserved, 1);
    EXPECT_EQ(o->failed, 1);
    EXPECT_FALSE(o->counts_capped);
    EXPECT_TRUE(o->estimates);  // the extension (1.5) estimates past the cap
    EXPECT_FALSE(o->pending_estimate || o->delayed_estimate || o->reserved_estimate || o->failed_estimate);
    ASSERT_TRUE(o->oldest_pending_at.has_value());
    EXPECT_TRUE(between(*o->oldest_pending_at, before, server_now()));

    // past the cap: the count stops there, and the pending jobs are estimated
    auto capped = overview_of(client, q, 1);
    ASSERT_TRUE(capped.has_value());
    EXPECT_TRUE(capped->counts_capped);
    EXPECT_EQ(capped->pending, 1);
    ASSERT_TRUE(capped->pending_estimate.has_value());
    EXPECT_GE(*capped->pending_estimate, 2);
    EXPECT_FALSE(capped->failed_estimate.has_value());
    EXPECT_THROW((void)client.overview(0), jobqueue::InvalidArgument);
}

// jobs_page() pages a queue by id, filters by state, and says who holds a job.
TEST_F(ClientTest, JobsPageByKeysetAndState) {
    auto q = queue();
    std::vector<std::int64_t> ids;
    for (int i = 0; i < 5; ++i) ids.push_back(client.push("n" + std::to_string(i), {}, on(q)));
    auto keyed = on(q);
    keyed.unique_key = q + "_key";
    keyed.delay = 1h;
    std::int64_t delayed = client.push("keyed", {}, keyed);
    jobqueue::JobsPageOptions first;
    first.max_rows = 2;
    auto page = client.jobs_page(q, first);
    ASSERT_EQ(page.size(), 2u);
    EXPECT_EQ(page[0].id, ids[0]);
    EXPECT_EQ(page[1].id, ids[1]);
    EXPECT_EQ(page[0].state, "pending");
    EXPECT_EQ(page[0].name, "n0");
    jobqueue::JobsPageOptions next = first;
    next.after_id = page[1].id;
    page = client.jobs_page(q, next);
    ASSERT_EQ(page.size(), 2u);
    EXPECT_EQ(page[0].id, ids[2]);
    EXPECT_EQ(page[1].id, ids[3]);

    auto claimed = client.reserve_one({q}, 1h, "page-worker");
    ASSERT_TRUE(claimed);
    jobqueue::JobsPageOptions reserved;
    reserved.state = "reserved";
    page = client.jobs_page(q, reserved);
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].id, claimed->id);
    EXPECT_EQ(page[0].reserved_by, "page-worker");
    ASSERT_TRUE(page[0].reserved_until.has_value());
    EXPECT_EQ(*page[0].reserved_until, claimed->reserved_until);

    jobqueue::JobsPageOptions waiting;
    waiting.state = "delayed";
    page = client.jobs_page(q, waiting);
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].id, delayed);
    EXPECT_EQ(page[0].unique_key, q + "_key");
    EXPECT_FALSE(page[0].reserved_by.has_value());

    jobqueue::JobsPageOptions bad;
    bad.state = "sleeping";
    EXPECT_THROW((void)client.jobs_page(q, bad), jobqueue::InvalidArgument);
}

// job() shows a live job and a failed one in full, and nothing for an unknown id.
TEST_F(ClientTest, JobLiveAndFailed) {
    auto q = queue();
    nlohmann::json payload = {{"html", "<script>x</script>"}, {"n", 1}};
    std::int64_t live = client.push("live", payload, on(q));
    auto d = client.job(live);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->summary.id, live);
    EXPECT_EQ(d->summary.state, "pending");
    EXPECT_EQ(d->queue, q);
    EXPECT_EQ(d->payload, payload);
    EXPECT_TRUE(d->summary.available_at.has_value());
    EXPECT_FALSE(d->failed_at.has_value());

    auto doomed = on(q);
    doomed.max_attempts = 1;
    doomed.priority = 9;
    std::int64_t dead = client.push("dead", {}, doomed);
    auto claim = client.reserve_one({q}, 1h);
    ASSERT_TRUE(claim && claim->id == dead);
    ASSERT_TRUE(client.fail(claim->id, claim->token, "it broke"));
    d = client.job(dead);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->summary.state, "failed");
    EXPECT_EQ(d->last_error, "it broke");
    EXPECT_TRUE(d->failed_at.has_value());
    EXPECT_EQ(d->summary.attempts, 1);

    EXPECT_FALSE(client.job(-1).has_value());
}

// leases() lists who holds which job.
TEST_F(ClientTest, LeasesNameTheirWorker) {
    auto q = queue();
    std::int64_t id = client.push("n", {}, on(q));
    auto claim = client.reserve_one({q}, 1h, q + "_worker");
    ASSERT_TRUE(claim);
    std::optional<jobqueue::Lease> mine;
    for (auto& lease : client.leases(1000))
        if (lease.id == id) mine = lease;
    ASSERT_TRUE(mine.has_value());
    EXPECT_EQ(mine->worker, q + "_worker");
    EXPECT_EQ(mine->queue, q);
    EXPECT_EQ(mine->name, "n");
    EXPECT_EQ(mine->attempts, 1);
    EXPECT_EQ(mine->reserved_until, claim->reserved_until);
}

// =============================================================== counters (1.4)

namespace {
std::optional<jobqueue::QueueCounters> counters_of(Client& c, const std::string& q) {
    for (auto& row : c.counters())
        if (row.queue == q) return row;
    return std::nullopt;
}
}  // namespace

// counters() reads queue_counters(): what this test did to its queue, and
// nothing it did not (the test cluster preloads the library).
TEST_F(ClientTest, CountersCountWhatHappened) {
    auto q = queue();
    EXPECT_FALSE(counters_of(client, q).has_value());
    for (int i = 0; i < 4; ++i) (void)client.push("n", {}, on(q));
    auto a = client.reserve_one({q}, 1h);
    auto b = client.reserve_one({q}, 1h);
    auto c = client.reserve_one({q}, 1h);
    ASSERT_TRUE(a && b && c);
    ASSERT_TRUE(client.complete(*a));
    ASSERT_TRUE(client.fail(b->id, b->token, "no"));
    ASSERT_TRUE(client.release(c->id, c->token, 0ms));
    EXPECT_EQ(client.retry_failed(b->id), 1);
    auto counted = counters_of(client, q);
    ASSERT_TRUE(counted.has_value());
    EXPECT_EQ(counted->pushed, 4);
    EXPECT_EQ(counted->claimed, 3);
    EXPECT_EQ(counted->completed, 1);
    EXPECT_EQ(counted->failed, 1);
    EXPECT_EQ(counted->released, 1);
    EXPECT_EQ(counted->retried, 1);
    EXPECT_EQ(counted->expired, 0);
}

// reset_counters() starts this database's counters from zero.
TEST_F(ClientTest, ResetCounters) {
    auto q = queue();
    (void)client.push("n", {}, on(q));
    ASSERT_TRUE(counters_of(client, q).has_value());
    client.reset_counters();
    auto after = counters_of(client, q);
    EXPECT_TRUE(!after || after->pushed == 0);
    (void)client.push("n", {}, on(q));
    after = counters_of(client, q);
    ASSERT_TRUE(after.has_value());
    EXPECT_EQ(after->pushed, 1);
}
