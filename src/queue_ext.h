/*-------------------------------------------------------------------------
 *
 * queue_ext.h
 *	  Settings and entry points shared by every part of queue_ext.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QUEUE_EXT_H
#define QUEUE_EXT_H

#include "postgres.h"

/* Schema that holds the public API and the extension's private tables */
#define MQ_SCHEMA "mq"

/* true when the library was loaded via shared_preload_libraries */
extern bool mq_preloaded;

/* Error out (with a hint) when a feature needs shared_preload_libraries */
extern void mq_require_preload(const char *feature);

#endif							/* QUEUE_EXT_H */
