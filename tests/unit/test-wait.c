/* SPDX-License-Identifier: Apache-2.0 */
/* test-wait: kube-wait's conditions parsed, objects judged, fail-fast rules */
#include <stdlib.h>
#include <string.h>

#include "kt.h"
#include "tap.h"
#include "wait.h"

/* the verdict and reason of --for text on the object doc (NULL: absent) */
static enum kt_wait_verdict judge(const char *text, const char *doc, char *reason, size_t size)
{
	struct kt_wait_cond c;
	struct kt_wait_result res;
	struct kt_err err = { 0 };
	cJSON *obj = doc ? tap_doc(doc) : NULL;

	if (kt_wait_cond_parse(text, &c, &err) < 0) {
		printf("# %s\n", err.msg);
		cJSON_Delete(obj);
		return (enum kt_wait_verdict) - 1;
	}
	kt_wait_judge(&c, obj, &res);
	if (reason)
		snprintf(reason, size, "%s", res.reason);
	kt_wait_cond_release(&c);
	cJSON_Delete(obj);
	return res.verdict;
}

static void verdict(const char *text, const char *doc, enum kt_wait_verdict want,
		    const char *want_reason, const char *name)
{
	char reason[KT_WAIT_REASON_MAX];
	enum kt_wait_verdict got = judge(text, doc, reason, sizeof(reason));

	if (got != want)
		printf("# verdict %d, want %d (%s)\n", (int)got, (int)want, reason);
	if (want_reason && got == want)
		tap_str(reason, want_reason, name);
	else
		tap_ok(got == want, name);
}

static void bad_for(const char *text, const char *want, const char *name)
{
	struct kt_wait_cond c;
	struct kt_err err = { 0 };

	if (kt_wait_cond_parse(text, &c, &err) == 0) {
		kt_wait_cond_release(&c);
		tap_ok(false, name);
		return;
	}
	tap_ok(err.kind == KT_ERR_INPUT, name);
	tap_str(err.msg, want, name);
}

static void fail_fast(const char *doc, enum kt_wait_verdict want, const char *want_reason,
		      const char *name)
{
	struct kt_wait_result res;
	cJSON *obj = tap_doc(doc);

	kt_wait_fail_fast(obj, &res);
	if (res.verdict != want)
		printf("# verdict %d, want %d (%s)\n", (int)res.verdict, (int)want, res.reason);
	if (res.verdict == want && want_reason)
		tap_str(res.reason, want_reason, name);
	else
		tap_ok(res.verdict == want, name);
	cJSON_Delete(obj);
}

static const char POD[] =
    "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"generation\":1,"
    "\"labels\":{\"app.kubernetes.io/name\":\"web\"}},"
    "\"status\":{\"phase\":\"Running\",\"conditions\":["
    "{\"type\":\"PodScheduled\",\"status\":\"True\"},"
    "{\"type\":\"Ready\",\"status\":\"True\"}],"
    "\"containerStatuses\":[{\"name\":\"c\",\"restartCount\":3,\"ready\":true},"
    "{\"name\":\"side\",\"restartCount\":0,\"ready\":false}]}}";

static void conditions(void)
{
	verdict("condition=Ready", POD, KT_WAIT_MET, "condition Ready=True", "condition met");
	verdict("condition=ready", POD, KT_WAIT_MET, NULL, "condition type without case");
	verdict("condition=Ready=true", POD, KT_WAIT_MET, NULL, "status without case");
	verdict("condition=Ready=False", POD, KT_WAIT_NOT_YET, "condition Ready=True",
		"another status is not yet");
	verdict("condition=Initialized", POD, KT_WAIT_NOT_YET, "no condition Initialized",
		"absent condition");
	verdict("condition=Ready", NULL, KT_WAIT_NOT_YET, "not created yet", "absent object");
	verdict("condition=Available",
		"{\"metadata\":{\"generation\":3},\"status\":{\"conditions\":[{\"type\":"
		"\"Available\",\"status\":\"True\",\"observedGeneration\":2}]}}",
		KT_WAIT_NOT_YET, "condition Available=True is of generation 2, not 3",
		"a condition of an older generation");
	verdict("condition=Available=False",
		"{\"status\":{\"conditions\":[{\"type\":\"Available\",\"status\":\"False\"}]}}",
		KT_WAIT_MET, NULL, "condition=TYPE=False");
}

static void jsonpaths(void)
{
	verdict("jsonpath={.status.phase}=Running", POD, KT_WAIT_MET, NULL, "braces and value");
	verdict("jsonpath=.status.phase=Running", POD, KT_WAIT_MET, NULL, "without braces");
	verdict("jsonpath=status.phase=Running", POD, KT_WAIT_MET, NULL, "without leading dot");
	verdict("jsonpath={.status.phase}=Pending", POD, KT_WAIT_NOT_YET,
		"{.status.phase} is Running", "another value");
	verdict("jsonpath={.status.containerStatuses[0].restartCount}=3", POD, KT_WAIT_MET, NULL,
		"an index, a number compared as printed");
	verdict("jsonpath={.status.containerStatuses[-1].name}=side", POD, KT_WAIT_MET, NULL,
		"a negative index");
	verdict("jsonpath={.status.containerStatuses[1].ready}=false", POD, KT_WAIT_MET, NULL,
		"a boolean as printed");
	verdict("jsonpath={.metadata.labels['app.kubernetes.io/name']}=web", POD, KT_WAIT_MET, NULL,
		"a quoted key");
	verdict("jsonpath={.metadata.labels[\"app.kubernetes.io/name\"]}=web", POD, KT_WAIT_MET,
		NULL, "a double-quoted key");
	verdict("jsonpath={.status.conditions[?(@.type==\"Ready\")].status}=True", POD, KT_WAIT_MET,
		NULL, "a filter");
	verdict("jsonpath={.status.conditions[?(@.type=='Nope')].status}=True", POD,
		KT_WAIT_NOT_YET, NULL, "a filter that finds nothing");
	verdict("jsonpath={.status.conditions[*].status}=True", POD, KT_WAIT_NEVER, NULL,
		"more than one value to compare");
	verdict("jsonpath={.status.conditions}=x", POD, KT_WAIT_NEVER, NULL,
		"a list is not a value to compare");
	verdict("jsonpath={.status.podIP}", POD, KT_WAIT_NOT_YET, NULL, "no value: absent");
	verdict("jsonpath={.status.conditions}", POD, KT_WAIT_MET, NULL, "no value: exists");
	verdict("jsonpath={.status.containerStatuses[7].name}=c", POD, KT_WAIT_NOT_YET, NULL,
		"an index out of range finds nothing");
}

static void forms(void)
{
	verdict("create", NULL, KT_WAIT_NOT_YET, NULL, "create: absent");
	verdict("create", POD, KT_WAIT_MET, NULL, "create: present");
	verdict("delete", NULL, KT_WAIT_MET, NULL, "delete: absent holds");
	verdict("delete", POD, KT_WAIT_NOT_YET, NULL, "delete: present");
	verdict("rollout", POD, KT_WAIT_MET, "created (a Pod has no rollout)",
		"rollout of a pod: met once it exists");
	bad_for("ready",
		"--for 'ready': expected condition=TYPE[=STATUS], jsonpath=EXPR[=VALUE], "
		"create, delete or rollout",
		"unknown form");
	bad_for("condition=", "--for 'condition=': the condition type is empty", "empty type");
	bad_for("condition=Ready=",
		"--for 'condition=Ready=': the condition status after '=' "
		"is empty",
		"empty status");
	bad_for("jsonpath={.status",
		"--for 'jsonpath={.status': the jsonpath's '{' is not "
		"closed",
		"open brace");
	bad_for("jsonpath={..name}=x",
		"--for 'jsonpath={..name}=x': recursive descent '..' is "
		"not supported",
		"recursive descent");
	bad_for("jsonpath={.a[0:2]}=x", "--for 'jsonpath={.a[0:2]}=x': slices are not supported",
		"slices");
	bad_for("jsonpath={.a}=", "--for 'jsonpath={.a}=': the value after '=' is empty",
		"empty value");
	bad_for("jsonpath={.a}x", "--for 'jsonpath={.a}x': '=' expected after the jsonpath's '}'",
		"junk after the braces");
	bad_for("jsonpath={.a[?(@.b>1)]}=x",
		"--for 'jsonpath={.a[?(@.b>1)]}=x': a filter "
		"compares with == or !=",
		"filter operator");
	bad_for("jsonpath=", "--for 'jsonpath=': the jsonpath is empty", "empty jsonpath");
	bad_for("jsonpath={.a.}", "--for 'jsonpath={.a.}': the jsonpath ends with '.'",
		"trailing dot");
}

#define DEPLOY(gen, obs, extra)                                                                    \
	"{\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\",\"generation\":" gen "},"         \
	"\"spec\":{\"replicas\":3},\"status\":{\"observedGeneration\":" obs extra "}}"

static void rollouts(void)
{
	verdict("rollout", DEPLOY("2", "1", ""), KT_WAIT_NOT_YET,
		"waiting for deployment spec update to be observed", "deployment: not observed");
	verdict("rollout", DEPLOY("2", "2", ",\"replicas\":3,\"updatedReplicas\":1"),
		KT_WAIT_NOT_YET, "1 out of 3 new replicas have been updated",
		"deployment: updating");
	verdict("rollout", DEPLOY("2", "2", ",\"replicas\":4,\"updatedReplicas\":3"),
		KT_WAIT_NOT_YET, "1 old replicas are pending termination", "deployment: old");
	verdict("rollout",
		DEPLOY("2", "2", ",\"replicas\":3,\"updatedReplicas\":3,\"availableReplicas\":2"),
		KT_WAIT_NOT_YET, "2 of 3 updated replicas are available", "deployment: available");
	verdict("rollout",
		DEPLOY("2", "2", ",\"replicas\":3,\"updatedReplicas\":3,\"availableReplicas\":3"),
		KT_WAIT_MET, "deployment \"web\" successfully rolled out", "deployment: done");
	verdict("rollout",
		DEPLOY("2", "2",
		       ",\"conditions\":[{\"type\":\"Progressing\",\"status\":\"False\","
		       "\"reason\":\"ProgressDeadlineExceeded\"}]"),
		KT_WAIT_NEVER, "deployment \"web\" exceeded its progress deadline",
		"deployment: progress deadline");
	verdict(
	    "rollout",
	    "{\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"d\",\"generation\":1},\"spec\":"
	    "{\"updateStrategy\":{\"type\":\"RollingUpdate\"}},\"status\":{\"observedGeneration\""
	    ":1,\"desiredNumberScheduled\":2,\"updatedNumberScheduled\":1}}",
	    KT_WAIT_NOT_YET, "1 out of 2 new pods have been updated", "daemonset: updating");
	verdict(
	    "rollout",
	    "{\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"d\",\"generation\":1},\"spec\":"
	    "{\"updateStrategy\":{\"type\":\"RollingUpdate\"}},\"status\":{\"observedGeneration\""
	    ":1,\"desiredNumberScheduled\":2,\"updatedNumberScheduled\":2,\"numberAvailable\":1}}",
	    KT_WAIT_NOT_YET, "1 of 2 updated pods are available", "daemonset: available");
	verdict(
	    "rollout",
	    "{\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"d\",\"generation\":1},\"spec\":"
	    "{\"updateStrategy\":{\"type\":\"RollingUpdate\"}},\"status\":{\"observedGeneration\""
	    ":1,\"desiredNumberScheduled\":2,\"updatedNumberScheduled\":2,\"numberAvailable\":2}}",
	    KT_WAIT_MET, NULL, "daemonset: done");
	verdict(
	    "rollout",
	    "{\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"d\"},\"spec\":{\"updateStrategy\":"
	    "{\"type\":\"OnDelete\"}}}",
	    KT_WAIT_NEVER, NULL, "daemonset: OnDelete");
	verdict("rollout",
		"{\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"s\",\"generation\":1},\"spec\":"
		"{\"replicas\":3,\"updateStrategy\":{\"type\":\"RollingUpdate\"}},\"status\":"
		"{\"observedGeneration\":1,\"readyReplicas\":1}}",
		KT_WAIT_NOT_YET, "waiting for 2 pods to be ready", "statefulset: ready");
	verdict("rollout",
		"{\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"s\",\"generation\":1},\"spec\":"
		"{\"replicas\":3,\"updateStrategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":"
		"{\"partition\":1}}},\"status\":{\"observedGeneration\":1,\"readyReplicas\":3,"
		"\"updatedReplicas\":1}}",
		KT_WAIT_NOT_YET,
		"waiting for partitioned roll out to finish: 1 out of 2 new pods "
		"have been updated",
		"statefulset: partition");
	verdict("rollout",
		"{\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"s\",\"generation\":1},\"spec\":"
		"{\"replicas\":3,\"updateStrategy\":{\"type\":\"RollingUpdate\"}},\"status\":"
		"{\"observedGeneration\":1,\"readyReplicas\":3,\"updatedReplicas\":1,"
		"\"updateRevision\":\"s-2\",\"currentRevision\":\"s-1\"}}",
		KT_WAIT_NOT_YET,
		"waiting for statefulset rolling update to complete 1 pods at "
		"revision s-2",
		"statefulset: revision");
	verdict("rollout",
		"{\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"s\",\"generation\":1},\"spec\":"
		"{\"replicas\":3,\"updateStrategy\":{\"type\":\"RollingUpdate\"}},\"status\":"
		"{\"observedGeneration\":1,\"readyReplicas\":3,\"currentReplicas\":3,"
		"\"updateRevision\":\"s-2\",\"currentRevision\":\"s-2\"}}",
		KT_WAIT_MET, "statefulset rolling update complete 3 pods at revision s-2",
		"statefulset: done");
}

#define WAITING(list, reason)                                                                      \
	"{\"kind\":\"Pod\",\"status\":{\"" list "\":[{\"name\":\"c\",\"state\":{\"waiting\":"      \
	"{\"reason\":\"" reason "\",\"message\":\"back-off 10s\"}}}]}}"

static void fail_fast_rules(void)
{
	fail_fast(WAITING("containerStatuses", "CrashLoopBackOff"), KT_WAIT_NEVER,
		  "container c is waiting in CrashLoopBackOff: back-off 10s", "CrashLoopBackOff");
	fail_fast(WAITING("containerStatuses", "ImagePullBackOff"), KT_WAIT_NEVER, NULL,
		  "ImagePullBackOff");
	fail_fast(WAITING("containerStatuses", "ErrImagePull"), KT_WAIT_NEVER, NULL,
		  "ErrImagePull");
	fail_fast(WAITING("containerStatuses", "CreateContainerConfigError"), KT_WAIT_NEVER, NULL,
		  "CreateContainerConfigError");
	fail_fast(WAITING("initContainerStatuses", "InvalidImageName"), KT_WAIT_NEVER, NULL,
		  "InvalidImageName in an init container");
	fail_fast(WAITING("containerStatuses", "ContainerCreating"), KT_WAIT_NOT_YET, NULL,
		  "ContainerCreating is not stuck");
	fail_fast("{\"kind\":\"Pod\",\"status\":{\"conditions\":[{\"type\":\"PodScheduled\","
		  "\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":\"0/1 nodes\"}]}}",
		  KT_WAIT_NEVER, "unschedulable: 0/1 nodes", "Unschedulable");
	fail_fast("{\"kind\":\"Job\",\"status\":{\"conditions\":[{\"type\":\"Failed\","
		  "\"status\":\"True\",\"reason\":\"BackoffLimitExceeded\"}]}}",
		  KT_WAIT_NEVER, "failed: BackoffLimitExceeded", "Job Failed");
	fail_fast("{\"kind\":\"Job\",\"status\":{\"conditions\":[{\"type\":\"Failed\","
		  "\"status\":\"False\"}]}}",
		  KT_WAIT_NOT_YET, NULL, "Job Failed=False");
	fail_fast("{\"kind\":\"Deployment\",\"status\":{\"conditions\":[{\"type\":\"Progressing\","
		  "\"status\":\"False\",\"reason\":\"ProgressDeadlineExceeded\"}]}}",
		  KT_WAIT_NEVER, "progress deadline exceeded", "ProgressDeadlineExceeded");
	fail_fast(POD, KT_WAIT_NOT_YET, NULL, "a healthy pod");
	fail_fast(
	    "{\"kind\":\"Pod\",\"status\":{\"containerStatuses\":[{\"name\":\"c\",\"state\":"
	    "{\"waiting\":{\"reason\":\"CrashLoopBackOff\",\"message\":\"a\\u001b[2Jb\\n\"}}}]}}",
	    KT_WAIT_NEVER, "container c is waiting in CrashLoopBackOff: a?[2Jb ",
	    "a message is made plain");
}

/* sel_ok(SEL, FIELD): accepted; sel_bad(SEL, FIELD, WANT): refused with WANT */
static void sel_ok(const char *sel, bool field)
{
	struct kt_err err = { 0 };

	tap_ok(kt_wait_selector_check(sel, field, &err) == 0, sel);
}

static void sel_bad(const char *sel, bool field, const char *want)
{
	struct kt_err err = { 0 };

	tap_ok(kt_wait_selector_check(sel, field, &err) < 0 && err.kind == KT_ERR_INPUT, sel);
	tap_str(err.msg, want, sel);
}

static void selectors(void)
{
	sel_ok("app=web", false);
	sel_ok("app==web,tier!=db", false);
	sel_ok(" app in (web, api) , !canary,env notin (dev),track", false);
	sel_ok("example.com/team=a-b_c.d,app=", false);
	sel_ok("replicas>2,x<-1", false);
	sel_bad("app=web,", false, "--selector 'app=web,': a label key is missing at ''");
	sel_bad("=web", false, "--selector '=web': a label key is missing at '=web'");
	sel_bad("app=-web", false, "--selector 'app=-web': '-web' is not a label value");
	sel_bad("App Web", false, "--selector 'App Web': expected an operator at 'Web'");
	sel_bad("app in web", false,
		"--selector 'app in web': 'in' and 'notin' take '(' values ')'");
	sel_bad("app in ()", false, "--selector 'app in ()': 'in' and 'notin' need a value");
	sel_bad("app in (a", false, "--selector 'app in (a': 'in' and 'notin' values end with ')'");
	sel_bad("!app=x", false, "--selector '!app=x': '!app' takes no operator");
	sel_bad("x>y", false, "--selector 'x>y': '<' and '>' take an integer");
	sel_bad("Example.com/app=x", false,
		"--selector 'Example.com/app=x': 'Example.com/app' is not a label key "
		"([prefix/]name, 63 characters at most, alphanumeric at both ends)");
	sel_bad("", false, "--selector '': must not be empty");
	sel_ok("status.phase=Running", true);
	sel_ok("metadata.name==web,spec.nodeName!=,metadata.namespace=a\\,b", true);
	sel_bad("status.phase", true,
		"--field-selector 'status.phase': 'status.phase' needs =, == or != and a value");
	sel_bad("a=b=c", true, "--field-selector 'a=b=c': an unescaped '=' in a value");
	sel_bad("a=b\\x", true, "--field-selector 'a=b\\x': '\\' escapes only , = ! and \\");
	sel_bad("=x", true, "--field-selector '=x': '' is not a field name");
}

int main(void)
{
	conditions();
	jsonpaths();
	forms();
	rollouts();
	fail_fast_rules();
	selectors();
	return tap_done();
}
