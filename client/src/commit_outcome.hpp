// commit_outcome.hpp (internal): what became of a transaction whose
// COMMIT's answer was lost, asked by the completer and by a transactional
// handler's thread alike.
#pragma once

#include <cstdint>

#include "jobqueue/client.hpp"

namespace jobqueue {

enum class CommitOutcome { committed, in_progress, not_committed };

// Asked on a new connection with the id taken before the COMMIT
// (Client::transaction_id). "in_progress": the old session has not ended
// yet, ask again shortly. An id the server does not know ("in the future":
// a standby promoted since) or no longer knows never committed there.
CommitOutcome commit_outcome(Client& client, std::int64_t transaction);

}  // namespace jobqueue
