/* SPDX-License-Identifier: Apache-2.0 */
/* reflector: follow a collection as client-go's reflector does: list, watch, resume */
#ifndef KT_REFLECTOR_H
#define KT_REFLECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "api.h"
#include "core.h"
#include "kt_err.h"
#include "loop.h"

/*
 * A reflector follows the objects of one collection (a path such as
 * /api/v1/namespaces/default/pods?labelSelector=app%3Dweb), or one object
 * (/api/v1/nodes/vk-1) through its collection, and reports every
 * change once, in order, as an event: ADDED, MODIFIED or DELETED with the
 * object at that version, and optionally BOOKMARK.
 *
 * It does what client-go's tools/cache/reflector.go does:
 *   - LIST the collection (in pages of page_size with limit/continue), and
 *     report each item as ADDED (unless KT_REFL_NO_INITIAL);
 *   - WATCH from the list's resourceVersion with allowWatchBookmarks=true
 *     and timeoutSeconds (random from 5 to 10 minutes unless set);
 *   - when the watch ends (the server's timeout, a dropped connection)
 *     WATCH again from the last resourceVersion seen, an event's or a
 *     bookmark's, so nothing is lost or repeated;
 *   - when the server says that resourceVersion is too old (410 Gone, as
 *     the reply to the WATCH or as an ERROR event), or the watch fails in
 *     another way, LIST again and report the difference from what it had
 *     reported: DELETED for an object that is gone (its last known state),
 *     MODIFIED for one whose resourceVersion changed, ADDED for a new one,
 *     nothing for an unchanged one.  An object deleted and created again
 *     under the same name (another uid) is DELETED then ADDED.  DELETED
 *     events come first, then the list's order.
 *   - waits between attempts with client-go's backoff: 800 ms, doubling to
 *     a 30 s cap, each wait plus up to 100% jitter, back to 800 ms after two
 *     minutes without one.  A watch that ends cleanly (having lasted a
 *     second, or with an event) is resumed at once.
 *
 * Differences from client-go, on purpose: every LIST asks for the latest
 * state (no resourceVersion=0 served from a cache, so the first events are
 * never older than the server's state); the first LIST is one-shot (its
 * failure ends the reflector, with the API client's own retries) unless
 * KT_REFL_WAIT_FOR_SERVER, later ones retry for ever on 429, 5xx and
 * transport errors; an answer that can never succeed (400, 401, 403, 404,
 * 405, 406, 415, 422) ends the reflector; with idle_ms a
 * watch that delivers no event and no bookmark for that long ends the
 * reflector (a silent or trickling server).
 *
 * The objects reported carry apiVersion and kind (a list's items get them
 * from the list's kind, PodList -> Pod).  The reflector keeps the last
 * reported version of every object, which the difference after a re-list
 * needs.
 *
 * Two layers.  The state machine (kt_refl_request, kt_refl_list_reply,
 * kt_refl_watch_line, kt_refl_watch_end) is pure: it builds requests, takes
 * replies and the time as arguments, and never does I/O; the drivers
 * (kt_refl_start on a loop, kt_refl_run blocking) send its requests through
 * struct kt_api.  Logging: -v 2 each list, watch, resume and re-list with
 * the resourceVersion, -v 4 backoff waits, bookmarks and each event's type
 * and key; a warning when an attempt fails.
 */

#define KT_REFL_PAGE_SIZE	 500
#define KT_REFL_NO_PAGING	 (-1L)	/* page_size: the list in one piece */
#define KT_REFL_WATCH_MIN_S	 300 /* client-go's minWatchTimeout */
#define KT_REFL_BACKOFF_FIRST_MS 800
#define KT_REFL_BACKOFF_MAX_MS	 30000
#define KT_REFL_BACKOFF_RESET_MS 120000
#define KT_REFL_KEEPALIVE_S	 30 /* TCP keepalive idle and interval of a watch */

enum kt_refl_flags {
	KT_REFL_NO_INITIAL = 1 << 0, /* no ADDED events for the first list */
	KT_REFL_BOOKMARKS = 1 << 1,  /* report BOOKMARK events, and one after the
					first list (the k8s.io/initial-events-end
					annotation, as the server marks the end of
					its initial events) */
	KT_REFL_WAIT_FOR_SERVER = 1 << 2, /* the first list too waits out what
					     later ones do (no answer, 429, 5xx),
					     as client-go's does: a follower
					     started before its server */
};

struct kt_refl_opts {
	const char *path;	 /* the collection, maybe with a query; borrowed */
	int64_t watch_timeout_s; /* timeoutSeconds of each watch; 0: random 300-599 */
	int64_t idle_ms;	 /* longest wait for an event or bookmark; 0: none */
	long page_size;		 /* a list page's limit; 0: KT_REFL_PAGE_SIZE;
				  * KT_REFL_NO_PAGING: one piece */
	unsigned flags;		 /* enum kt_refl_flags */
};

/*
 * Called for each event, in order.  type is "ADDED", "MODIFIED", "DELETED"
 * or "BOOKMARK"; object is borrowed (copy what you keep).  Return 0, or -1
 * to stop the reflector: it ends with err "stopped" and http_status -1.
 */
typedef int kt_refl_event_fn(const char *type, const cJSON *object, void *arg);

/* what to do next */
enum kt_refl_next {
	KT_REFL_SEND, /* send kt_refl_request's request now */
	KT_REFL_WAIT, /* send it after *delay_ms */
	KT_REFL_DONE, /* the reflector ended: err says why (kind and http_status) */
};

enum kt_refl_step {
	KT_REFL_LIST,  /* a page of a list */
	KT_REFL_WATCH, /* a watch */
};

/* a request to send; pointers live in the struct kt_refl until its next call */
struct kt_refl_req {
	enum kt_refl_step step;
	const char *path;   /* GET this */
	int64_t timeout_ms; /* for struct kt_api_req: 0 the client's, -1 none */
};

/* the end of a request */
struct kt_refl_reply {
	long status;	   /* HTTP status; 0 when none came */
	const cJSON *json; /* the body of a list, or a Status; NULL if none */
	const char *error; /* what failed, for the log and err (borrowed) */
	bool idle;	   /* the driver ended a watch that was silent past idle_ms */
};

/* one object as last reported */
struct kt_refl_obj {
	char *key;  /* "namespace/name", or "name" */
	char *uid;  /* metadata.uid, "" if none */
	char *rv;   /* metadata.resourceVersion, "" if none */
	cJSON *obj; /* with apiVersion and kind */
	size_t slot; /* its place in kt_refl_objects' array */
};

struct kt_refl {
	char *base; /* opts.path */
	int64_t watch_timeout_s;
	int64_t idle_ms;
	long page_size;
	unsigned flags;
	kt_refl_event_fn *fn;
	void *fn_arg;
	unsigned seed;

	/* what was reported: objects in report order (NULL holes), a map by key */
	struct kt_refl_obj **objs;
	size_t nobjs, cap, live;
	void *index; /* the key -> object map */
	/* objects made known under a name another known one holds (another uid) */
	struct kt_refl_obj **replaced;
	size_t nreplaced;

	enum kt_refl_step step;
	bool listed;			/* a list has completed */
	char *rv;			/* resume from this resourceVersion */
	char *cont;			/* the continue token of the next page */
	char *list_rv;			/* the first page's resourceVersion */
	bool one_page;			/* a continue token expired: no limit */
	cJSON *pages;			/* items of a paged list so far */
	char *item_version, *item_kind; /* for items of the list */
	char *path;			/* the request last built */
	int64_t watch_start_ms;
	long events;	  /* events of the current watch, bookmarks too */
	bool expired;	  /* the current watch's ERROR said 410 Gone */
	char *stop_error; /* why the current watch ended early */
	struct kt_backoff backoff;
	struct kt_err err;
};

/*
 * opts is copied (path too); fn is called for each event.  -1 with err
 * (KT_ERR_INPUT) when the path cannot be followed (kt_refl_check_path).  seed makes the
 * jitter and the random watch timeout (tests pass a fixed one).  -1 when
 * out of memory.  kt_refl_release frees what it holds; a zeroed struct is
 * fine.
 */
int kt_refl_init(struct kt_refl *r, const struct kt_refl_opts *opts, kt_refl_event_fn *fn,
		 void *arg, unsigned seed, struct kt_err *err);
void kt_refl_release(struct kt_refl *r);

/*
 * Before the first list: obj (taken; freed on failure too) is one the caller
 * already has, as if it had been reported, so that the first list reports only
 * the difference, as a re-list does: DELETED for a known object that is gone
 * or replaced, MODIFIED for one whose resourceVersion differs, ADDED for a new
 * one, nothing for one unchanged.  A watcher that restarts hands in what it
 * knew, and misses no delete made while it was away.  One name may be known
 * under several uids (deleted and created again): each that is not the listed
 * one is DELETED.  -1 with err: no metadata.name or one object known twice
 * (KT_ERR_INPUT), after the first list, or out of memory.
 */
int kt_refl_know(struct kt_refl *r, cJSON *obj, struct kt_err *err);

/*
 * 0 when path can be followed: a collection, or one object (followed as its
 * collection with fieldSelector=metadata.name=NAME, as kubectl get NAME
 * --watch does; it then takes no fieldSelector of its own).  -1 with err
 * (KT_ERR_INPUT) for a subresource.  kt_refl_init checks the same.
 */
int kt_refl_check_path(const char *path, struct kt_err *err);

/*
 * The first query parameter of path that the reflector sets itself (watch,
 * resourceVersion, limit, continue, ...) or that would change what it is
 * sent (resourceVersionMatch, sendInitialEvents); NULL when there is none.
 * A path to follow must leave them out.  The name is static.
 */
const char *kt_refl_own_param(const char *path);

/* whether path's query asks for a watch (watch= anything but 0 or false):
 * its reply would never end, as a plain request's must */
bool kt_refl_query_watches(const char *path);

/* the request for the current step, sent at monotonic now_ms; -1 with err
 * when out of memory */
int kt_refl_request(struct kt_refl *r, int64_t now_ms, struct kt_refl_req *req,
		    struct kt_err *err);

/* a list page's reply, at monotonic now_ms; reports the list's events */
enum kt_refl_next kt_refl_list_reply(struct kt_refl *r, const struct kt_refl_reply *reply,
				     int64_t now_ms, int64_t *delay_ms);

/*
 * An event in the API's watch framing, {"type":TYPE,"object":OBJECT} (a
 * copy of object), as a watch's body carries it and followers print it.
 * Caller owns (cJSON_Delete); NULL when out of memory.
 */
cJSON *kt_refl_event(const char *type, const cJSON *object);

/*
 * One line of a watch's body (not NUL-terminated, borrowed): reports its
 * event.  Returns 0 to go on, -1 when the watch must end now (an ERROR
 * event, a line that is not an event, or the callback said stop); the
 * driver then stops the transfer and calls kt_refl_watch_end.
 */
int kt_refl_watch_line(struct kt_refl *r, const char *line, size_t len);

/* the end of a watch (a reply with status 0 and error for a transport failure) */
enum kt_refl_next kt_refl_watch_end(struct kt_refl *r, const struct kt_refl_reply *reply,
				    int64_t now_ms, int64_t *delay_ms);

/* the last resourceVersion seen ("" before the first list); lives in r */
const char *kt_refl_resource_version(const struct kt_refl *r);

/* the objects as last reported, in report order; n gets the count.
 * Entries are r's (NULL for a slot no longer used): read only. */
struct kt_refl_obj *const *kt_refl_objects(const struct kt_refl *r, size_t *n);

/*
 * The version last reported of the object obj (borrowed) names: the same
 * namespace, name and uid; NULL when there is none.  Called from the event
 * callback it is the version before the event's (for the first list, the
 * one made known).  Lives in r until the next event; read only.
 */
const cJSON *kt_refl_last(const struct kt_refl *r, const cJSON *obj);

/*
 * The drivers.  kt_refl_start runs r on loop: its requests go through api
 * (r, api and loop are borrowed and must outlive the run); done is called
 * once, on the loop, when the reflector ends (err says why), and never
 * after kt_refl_cancel.  The caller frees the handle with kt_refl_cancel,
 * after done or to stop it early.  NULL with err (done never called) when
 * the first request cannot start.  kt_refl_run does the same on a loop of
 * its own, for a tool that only follows: it returns 0 when SIGTERM or SIGINT
 * stops it (they are taken while it runs), and -1 with err when the
 * reflector ends (err "stopped" with http_status -1 when the event callback
 * asked for it); it follows for ever while the server answers.
 */
struct kt_refl_run;
typedef void kt_refl_done_fn(struct kt_refl *r, const struct kt_err *err, void *arg);

struct kt_refl_run *kt_refl_start(struct kt_refl *r, struct kt_api *api,
				  struct kt_loop *loop, kt_refl_done_fn *done, void *arg,
				  struct kt_err *err);
void kt_refl_cancel(struct kt_refl_run *run);
int kt_refl_run(struct kt_refl *r, struct kt_api *api, struct kt_err *err);

#endif
