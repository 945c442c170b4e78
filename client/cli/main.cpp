// main.cpp: the jobqueue command-line tool.
//
// Exit status: 0 ok, 1 usage (bad flags, bad JSON, bad durations), 2 the
// database refused (with its SQLSTATE), 3 no connection.
#include <signal.h>

#include "commands.hpp"

namespace {

// The client's messages start with "jobqueue: "; ours add "jobqueue: error: ".
std::string bare(const std::string& message) {
    const std::string prefix = "jobqueue: ";
    return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

// The error is one line: libpq's messages span several ("...failed: ...\n\tIs
// the server running...?\n"), so each line break and the blanks around it
// become one space.
std::string one_line(const std::string& message) {
    std::string out;
    bool pending_break = false;
    for (char c : message) {
        if (c == '\n' || c == '\r') {
            pending_break = true;
            while (!out.empty() && (out.back() == ' ' || out.back() == '\t')) out.pop_back();
        } else if (pending_break && (c == ' ' || c == '\t')) {
            continue;
        } else {
            if (pending_break && !out.empty()) out += ' ';
            pending_break = false;
            out += c;
        }
    }
    return out;
}

int report(const std::string& message, const std::string& sqlstate, int status) {
    std::cerr << "jobqueue: error: " << one_line(bare(message));
    if (!sqlstate.empty()) std::cerr << " (SQLSTATE " << sqlstate << ")";
    std::cerr << "\n";
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    signal(SIGPIPE, SIG_IGN);  // a closed pipe to a job's command is an error, not a crash

    using namespace jobqueue::cli;
    CLI::App app{"jobqueue: operate a jobqueue queue from the shell", "jobqueue"};
    Context context;
    app.add_option("--dsn", context.dsn, "libpq connection string (default: the PG* environment, as psql)");
    app.add_option("--schema", context.schema, "Schema of the extension (default: found through search_path)");
    app.add_option("--pooler", context.pooler,
                   "detect, session or transaction (env JOBQUEUE_POOLER): transaction, for PgBouncer's "
                   "pool_mode = transaction, sends unnamed statements; detect (default) takes any pooler it "
                   "finds for a transaction pooler")
        ->envname("JOBQUEUE_POOLER")
        ->check([](const std::string& text) {
            return jobqueue::parse_pooler_mode(text) ? std::string() : "must be detect, session or transaction";
        });
    app.require_subcommand(1);
    app.footer("Run 'jobqueue SUBCOMMAND --help' for a subcommand's options and an example.");
    add_read_commands(app, context);
    add_admin_commands(app, context);
    add_push_command(app, context);
    add_work_command(app, context);
    add_schedule_command(app, context);
    add_flow_commands(app, context);
#ifdef JOBQUEUE_WITH_DASHBOARD
    add_dashboard_command(app, context);
#endif

    try {
        app.parse(argc, argv);
        return 0;
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        return report(e.what(), "", 1);
    } catch (const UsageError& e) {
        return report(e.what(), "", 1);
    } catch (const jobqueue::ConnectionError& e) {
        return report(e.what(), e.sqlstate(), 3);
    } catch (const jobqueue::Error& e) {
        return report(e.what(), e.sqlstate(), 2);
    } catch (const NotDone& e) {
        return report(e.what(), "", 2);
    } catch (const std::exception& e) {
        return report(e.what(), "", 2);
    }
}
