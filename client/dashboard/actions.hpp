// actions.hpp: what the page's buttons do, each through the extension's
// functions with the role the dashboard connected as (a role without the
// tier gets the server's refusal, 42501, never more rights).
#pragma once

#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "jobqueue/client.hpp"

namespace jobqueue::dashboard {

// A request the page got wrong (400): a missing or mistyped field.
struct BadRequest : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// An action reads its arguments from the request's JSON body and answers
// JSON. Throws BadRequest, or what the client throws.
using Action = std::function<nlohmann::json(Client&, const nlohmann::json& body)>;

// The actions by name: POST /api/actions/<name>.
//   pause, resume   {queue}
//   clear           {queue, confirm: true}          -> {deleted}
//   retry           {ids: [...]}                    -> {requeued}
//   forget          {ids: [...], confirm: true}     -> {forgotten}
//   cancel          {id, force?}                    -> {cancelled}
// retry and forget run in one transaction: all ids or none.
const std::map<std::string, Action>& actions();

// The most ids one retry or forget takes (the page sends those it shows).
constexpr std::size_t kMaxActionIds = 1000;

}  // namespace jobqueue::dashboard
