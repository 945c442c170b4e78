/*-------------------------------------------------------------------------
 *
 * api/api.h
 *	  The SQL entry points: what the functions of the SQL API call.
 *
 * push, batch, reserve, complete, failed, admin, reports, browse,
 * schedules, grants, shard and the ring's rotation.  What one entry point
 * shares with another is declared here.
 *
 * The layers and the rule between them: extension/src/README.md.
 *
 *-------------------------------------------------------------------------
 */
#ifndef JOBQUEUE_API_H
#define JOBQUEUE_API_H

#include "flow/flow.h"

extern void ClearJobSpecFlow(JobSpec *job);
extern OnDuplicate ParseOnDuplicate(const char *value, const char *argname);
extern bool ParseAfterFailed(const char *value, const char *argname);
extern void SetJobSpecParents(JobSpec *job, int64 *ids, int count, const char *argname);
extern void CheckJobSpecFlow(const JobSpec *job, TimestampTz now);
extern bool JobSpecUsesFlow(const JobSpec *job);
extern int64 InsertJob(const JqCall *call, const JobSpec *job, bool *inserted, bool *wake);
extern void CheckDeadline(TimestampTz deadline, TimestampTz available_at);
extern void NoteJobSpecDue(const JobSpec *job, TimestampTz now);

/* complete.c: finishing one claimed job, shared with the batch calls */
extern bool MoveClaimedToFailed(const JqCall *call, int64 id, int64 token, text *error);
extern void MoveClaimedToFailedMany(const JqCall *call, int count, const int64 *ids,
									const int64 *tokens, text *error, bool *failed);
extern void ReleaseClaimedMany(const JqCall *call, int count, const int64 *ids,
							   const int64 *tokens, Interval *delay, text *error,
							   List **wake_queues, bool *released);
extern void ArgIdAndToken(FunctionCallInfo fcinfo, int64 *id, int64 *token);
extern bool DeleteJobWithStatement(const JqCall *call, int64 id, int64 token);
extern void NoteCompletedDirectly(const JqCall *call, text *queue, text *slot_key);

/* api/promote.c: queue_reserve's first step, the jobs whose moment has come */
extern bool PromoteDueJobs(const JqCall *call, ArrayType *queues);

/* api/rotation.c: the storage ring's rotation */
extern void JobqueueDefineRotation(void);
extern void RotateRingIfDue(const JqCall *call);

/* The tables of statements of the folder's files, registered by its Init. */
extern JqStatementSet admin_statements;
extern JqStatementSet batch_statements;
extern JqStatementSet browse_statements;
extern JqStatementSet complete_statements;
extern JqStatementSet failed_statements;
extern JqStatementSet grants_statements;
extern JqStatementSet promote_statements;
extern JqStatementSet push_statements;
extern JqStatementSet reports_statements;
extern JqStatementSet reserve_statements;
extern JqStatementSet rotation_statements;
extern JqStatementSet schedules_statements;

/* api.c */
extern void JqApiInit(void);

#endif							/* JOBQUEUE_API_H */
