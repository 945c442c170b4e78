// Pushes a job, claims it and completes it through the installed library;
// exits non-zero if any step does not do what it should.
#include <iostream>

#include <jobqueue/jobqueue.hpp>

int main() {
    try {
        jobqueue::Client client;  // the PG* environment
        jobqueue::PushOptions options;
        options.queue = "consumer_check";
        auto id = client.push("hello", {{"from", "find_package"}}, options);
        auto job = client.reserve_one({"consumer_check"});
        if (!job || job->id != id || job->payload["from"] != "find_package") {
            std::cerr << "consumer: the pushed job was not claimed back\n";
            return 1;
        }
        if (!client.complete(*job)) {
            std::cerr << "consumer: completing the job failed\n";
            return 1;
        }
        std::cout << "consumer: pushed, claimed and completed job " << id << " through find_package(jobqueue)\n";
        return 0;
    } catch (const jobqueue::Error& e) {
        std::cerr << "consumer: " << e.what() << " (SQLSTATE " << e.sqlstate() << ")\n";
        return 2;
    }
}
