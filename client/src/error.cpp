// error.cpp: SQLSTATE -> exception class.
#include "jobqueue/error.hpp"

namespace jobqueue {

void throw_error(const std::string& message, const std::string& sqlstate) {
    if (sqlstate == "40001" || sqlstate == "40P01") throw RetryableError(message, sqlstate);
    if (sqlstate == "42501") throw PermissionDenied(message, sqlstate);
    if (sqlstate.rfind("22", 0) == 0 || sqlstate == "54000") throw InvalidArgument(message, sqlstate);
    if (sqlstate.rfind("08", 0) == 0 || sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03")
        throw ConnectionError(message, sqlstate);
    throw Error(message, sqlstate);
}

}  // namespace jobqueue
