// jobqueue/jobqueue.hpp: everything of the jobqueue client library.
#pragma once

#include "jobqueue/client.hpp"
#include "jobqueue/error.hpp"
#include "jobqueue/job.hpp"
#include "jobqueue/worker.hpp"
