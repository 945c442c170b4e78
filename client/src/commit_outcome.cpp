// commit_outcome.cpp: see commit_outcome.hpp.
#include "commit_outcome.hpp"

#include <optional>
#include <string>

#include "jobqueue/error.hpp"

namespace jobqueue {

CommitOutcome commit_outcome(Client& client, std::int64_t transaction) {
    std::optional<std::string> status;
    try {
        status = client.transaction_status(transaction);
    } catch (const InvalidArgument&) {
        return CommitOutcome::not_committed;  // in the future: not committed here
    }
    if (status && *status == "committed") return CommitOutcome::committed;
    if (status && *status == "in progress") return CommitOutcome::in_progress;
    return CommitOutcome::not_committed;
}

}  // namespace jobqueue
