// client_pool.cpp: lending Clients to request threads.
#include "client_pool.hpp"

namespace jobqueue::dashboard {

ClientPool::ClientPool(ClientOptions options, std::size_t max_clients, std::chrono::milliseconds statement_timeout,
                       std::chrono::milliseconds wait_timeout)
    : options_(std::move(options)),
      max_clients_(max_clients),
      statement_timeout_(statement_timeout),
      wait_timeout_(wait_timeout) {}

ClientPool::Lease::Lease(ClientPool& pool, std::unique_ptr<Client> client, bool fresh)
    : pool_(&pool), client_(std::move(client)), fresh_(fresh) {}

ClientPool::Lease::Lease(Lease&& other) noexcept
    : pool_(other.pool_), client_(std::move(other.client_)), fresh_(other.fresh_) {}

ClientPool::Lease::~Lease() {
    if (client_) pool_->give_back(std::move(client_));
}

std::unique_ptr<Client> ClientPool::open() {
    auto client = std::make_unique<Client>(options_);
    // A session setting: each statement of this connection is cut by the
    // server after the timeout (57014), which reaches the page as an error.
    client->execute("SET statement_timeout = " + std::to_string(statement_timeout_.count()));
    return client;
}

ClientPool::Lease ClientPool::take(bool fresh_only) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!freed_.wait_for(lock, wait_timeout_, [&] { return !idle_.empty() || open_ < max_clients_; }))
        throw PoolBusy("every database connection of the dashboard is busy");
    std::unique_ptr<Client> replaced;
    if (!idle_.empty()) {
        replaced = std::move(idle_.back());
        idle_.pop_back();
        if (!fresh_only && replaced->healthy()) return Lease(*this, std::move(replaced), false);
        // else its place goes to the new connection opened below
    } else {
        ++open_;
    }
    lock.unlock();
    replaced.reset();  // closes it outside the lock
    try {
        return Lease(*this, open(), true);
    } catch (...) {
        lock.lock();
        --open_;
        freed_.notify_one();
        throw;
    }
}

ClientPool::Lease ClientPool::acquire() { return take(false); }
ClientPool::Lease ClientPool::acquire_fresh() { return take(true); }

void ClientPool::give_back(std::unique_ptr<Client> client) {
    bool keep = client->healthy();
    if (!keep) client.reset();  // closes the broken connection outside the lock
    std::lock_guard<std::mutex> lock(mutex_);
    if (keep)
        idle_.push_back(std::move(client));
    else
        --open_;
    freed_.notify_one();
}

}  // namespace jobqueue::dashboard
