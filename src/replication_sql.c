/*-------------------------------------------------------------------------
 *
 * replication_sql.c
 *	  Monitoring: the summary row of the mq.replication view (whether
 *	  quorum commits can be confirmed now) and mq.queues.quorum_met.  The
 *	  view joins it to pg_stat_replication for the standbys themselves.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "funcapi.h"
#include "utils/pg_lsn.h"
#include "utils/timestamp.h"

#include "quorum.h"

PG_FUNCTION_INFO_V1(mq_replication_summary);

/*
 * mq._replication_summary(): required and connected synchronous standbys,
 * quorum_met (NULL on a standby, which takes no writes), commits made
 * without a quorum since server start, since when (NULL: not now), and the
 * WAL position the standbys' lag is measured from.
 */
Datum
mq_replication_summary(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {0};
	MqQuorumState st;
	bool		recovery = RecoveryInProgress();

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	mq_quorum_state(&st);
	values[0] = Int32GetDatum(st.required);
	values[1] = Int32GetDatum(st.connected);
	values[2] = BoolGetDatum(st.met);
	nulls[2] = recovery;
	values[3] = Int64GetDatum(st.commits_without_quorum);
	values[4] = TimestampTzGetDatum(st.without_quorum_since);
	nulls[4] = st.without_quorum_since == 0;
	values[5] = LSNGetDatum(recovery ? GetXLogReplayRecPtr(NULL) :
							GetXLogWriteRecPtr());
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
