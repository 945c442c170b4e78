// client_pool.hpp: the dashboard's database connections.
//
// The HTTP server answers on several threads and a Client belongs to one
// thread at a time, so each request borrows a Client from this pool for
// the length of its work and gives it back. Connections are opened when
// needed, each with a statement_timeout so that a slow database cannot
// hold a request (and its thread) for long; one found broken is dropped
// and the next request opens a new one, so the dashboard recovers by
// itself when the database comes back.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "jobqueue/client.hpp"

namespace jobqueue::dashboard {

// No connection came free in time.
struct PoolBusy : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class ClientPool {
public:
    ClientPool(ClientOptions options, std::size_t max_clients, std::chrono::milliseconds statement_timeout,
               std::chrono::milliseconds wait_timeout);

    // A borrowed client, given back when the lease ends (dropped if its
    // connection broke).
    class Lease {
    public:
        Lease(Lease&& other) noexcept;
        Lease& operator=(Lease&&) = delete;
        ~Lease();
        Client& operator*() const noexcept { return *client_; }
        Client* operator->() const noexcept { return client_.get(); }
        // Whether the connection was opened for this lease (false: it
        // served other requests before, and may have been cut since).
        [[nodiscard]] bool fresh() const noexcept { return fresh_; }

    private:
        friend class ClientPool;
        Lease(ClientPool& pool, std::unique_ptr<Client> client, bool fresh);
        ClientPool* pool_;
        std::unique_ptr<Client> client_;
        bool fresh_;
    };

    // An idle client, or a new connection when none is idle and fewer than
    // max_clients are open; else waits up to wait_timeout (PoolBusy).
    // Throws ConnectionError when a new connection cannot be made.
    Lease acquire();
    // The same, but always a new connection (an idle one is closed).
    Lease acquire_fresh();

private:
    Lease take(bool fresh_only);
    std::unique_ptr<Client> open();
    void give_back(std::unique_ptr<Client> client);

    ClientOptions options_;
    std::size_t max_clients_;
    std::chrono::milliseconds statement_timeout_;
    std::chrono::milliseconds wait_timeout_;
    std::mutex mutex_;
    std::condition_variable freed_;
    std::vector<std::unique_ptr<Client>> idle_;
    std::size_t open_ = 0;  // idle plus lent
};

}  // namespace jobqueue::dashboard
