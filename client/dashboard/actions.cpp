// actions.cpp: the page's actions.
#include "actions.hpp"

#include <vector>

namespace jobqueue::dashboard {

namespace {

std::string text_field(const nlohmann::json& body, const char* name) {
    auto it = body.find(name);
    if (it == body.end() || !it->is_string()) throw BadRequest(std::string("\"") + name + "\" must be a string");
    return it->get<std::string>();
}

std::int64_t id_value(const nlohmann::json& value, const char* name) {
    if (!value.is_number_integer()) throw BadRequest(std::string("\"") + name + "\" must hold integer job ids");
    return value.get<std::int64_t>();
}

std::vector<std::int64_t> ids_field(const nlohmann::json& body) {
    auto it = body.find("ids");
    if (it == body.end() || !it->is_array() || it->empty())
        throw BadRequest("\"ids\" must be a non-empty array of job ids");
    if (it->size() > kMaxActionIds)
        throw BadRequest("\"ids\" holds more than " + std::to_string(kMaxActionIds) + " job ids");
    std::vector<std::int64_t> ids;
    for (const auto& value : *it) ids.push_back(id_value(value, "ids"));
    return ids;
}

// A destructive action must say it was confirmed, so that a request made
// by mistake (or by a script that did not mean it) deletes nothing.
void require_confirm(const nlohmann::json& body) {
    auto it = body.find("confirm");
    if (it == body.end() || *it != true) throw BadRequest("this action deletes jobs: send \"confirm\": true");
}

// Runs `each` for every id in one transaction: all or nothing. The
// connection goes back to the pool outside any transaction whatever
// happens (a failed ROLLBACK means the connection broke: it is dropped).
template <typename Each>
std::int64_t in_one_transaction(Client& client, const std::vector<std::int64_t>& ids, Each&& each) {
    client.execute("BEGIN");
    std::int64_t total = 0;
    try {
        for (std::int64_t id : ids) total += each(id);
        client.execute("COMMIT");
    } catch (...) {
        try {
            client.execute("ROLLBACK");
        } catch (const Error&) {
        }
        throw;
    }
    return total;
}

nlohmann::json pause(Client& client, const nlohmann::json& body) {
    std::string queue = text_field(body, "queue");
    client.pause(queue);
    return {{"queue", queue}, {"paused", true}};
}

nlohmann::json resume(Client& client, const nlohmann::json& body) {
    std::string queue = text_field(body, "queue");
    client.resume(queue);
    return {{"queue", queue}, {"paused", false}};
}

nlohmann::json clear(Client& client, const nlohmann::json& body) {
    std::string queue = text_field(body, "queue");
    require_confirm(body);
    return {{"queue", queue}, {"deleted", client.clear(queue)}};
}

nlohmann::json retry(Client& client, const nlohmann::json& body) {
    auto ids = ids_field(body);
    auto requeued = in_one_transaction(client, ids, [&](std::int64_t id) { return client.retry_failed(id); });
    return {{"requeued", requeued}};
}

nlohmann::json forget(Client& client, const nlohmann::json& body) {
    auto ids = ids_field(body);
    require_confirm(body);
    auto forgotten = in_one_transaction(client, ids, [&](std::int64_t id) { return client.forget_failed(id); });
    return {{"forgotten", forgotten}};
}

nlohmann::json cancel(Client& client, const nlohmann::json& body) {
    auto it = body.find("id");
    if (it == body.end()) throw BadRequest("\"id\" must be a job id");
    std::int64_t id = id_value(*it, "id");
    bool force = false;
    if (auto f = body.find("force"); f != body.end()) {
        if (!f->is_boolean()) throw BadRequest("\"force\" must be true or false");
        force = f->get<bool>();
    }
    return {{"id", id}, {"cancelled", client.cancel(id, force)}};
}

}  // namespace

const std::map<std::string, Action>& actions() {
    static const std::map<std::string, Action> table = {
        {"pause", pause}, {"resume", resume}, {"clear", clear},
        {"retry", retry}, {"forget", forget}, {"cancel", cancel},
    };
    return table;
}

}  // namespace jobqueue::dashboard
