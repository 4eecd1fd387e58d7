/*-------------------------------------------------------------------------
 *
 * mqlog_verify.c
 *	  mq.mqlog_verify(regclass): structural check of an mqlog table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "am/mqlog.h"
