/* SPDX-License-Identifier: Apache-2.0 */
/*
 * git_load: libgit2 is opened when node-history first asks for it, not when
 * it starts.  Debian's libgit2 brings its network transports' libraries with
 * it (mbed TLS, SSH, Kerberos, PCRE), which node-history never uses: binding
 * them cost 2.5 ms of CPU and 3.5 MiB before main, on --version and usage
 * errors too.  Each libgit2 function node-history calls is defined here with
 * libgit2's own name and prototype and passes the call on; the first call
 * opens the library.  If it cannot be opened, each call fails as libgit2
 * fails (-1, NULL, 0) and git_error_last says why.  As with curl_load.c,
 * nothing linked refers to these definitions, so they are not exported.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <git2.h>
#include <git2/sys/odb_backend.h>

/* F(return type, name without git_, parameters, arguments, value on failure);
 * V(name, parameters, arguments) for the functions that return nothing */
#define GIT_FUNCS(F, V) \
	F(int, blob_create_from_buffer, (git_oid *id, git_repository *repo, \
	    const void *buffer, size_t len), \
	  (id, repo, buffer, len), -1) \
	V(blob_free, (git_blob *blob), (blob)) \
	F(int, blob_lookup, (git_blob **blob, git_repository *repo, const git_oid *id), \
	  (blob, repo, id), -1) \
	F(const void *, blob_rawcontent, (const git_blob *blob), (blob), NULL) \
	F(git_object_size_t, blob_rawsize, (const git_blob *blob), (blob), 0) \
	F(int, checkout_head, (git_repository *repo, const git_checkout_options *opts), \
	  (repo, opts), -1) \
	F(int, checkout_options_init, (git_checkout_options *opts, unsigned int version), \
	  (opts, version), -1) \
	F(const git_signature *, commit_author, (const git_commit *commit), \
	  (commit), NULL) \
	F(const git_signature *, commit_committer, (const git_commit *commit), \
	  (commit), NULL) \
	F(int, commit_create, (git_oid *id, git_repository *repo, \
	    const char *update_ref, const git_signature *author, \
	    const git_signature *committer, const char *message_encoding, \
	    const char *message, const git_tree *tree, size_t parent_count, \
	    const git_commit *parents[]), \
	(id, repo, update_ref, author, committer, message_encoding, message, tree, \
	    parent_count, parents), -1) \
	V(commit_free, (git_commit *commit), (commit)) \
	F(int, commit_lookup, (git_commit **commit, git_repository *repo, \
	    const git_oid *id), \
	  (commit, repo, id), -1) \
	F(int, commit_parent, (git_commit **out, const git_commit *commit, \
	    unsigned int n), \
	  (out, commit, n), -1) \
	F(unsigned int, commit_parentcount, (const git_commit *commit), (commit), 0) \
	F(const char *, commit_summary, (git_commit *commit), (commit), NULL) \
	F(int, commit_tree, (git_tree **tree_out, const git_commit *commit), \
	  (tree_out, commit), -1) \
	F(const git_error *, error_last, (void), (), &load_failure) \
	F(int, libgit2_init, (void), (), -1) \
	F(int, libgit2_shutdown, (void), (), -1) \
	F(int, odb_add_backend, (git_odb *odb, git_odb_backend *backend, int priority), \
	  (odb, backend, priority), -1) \
	F(int, odb_backend_pack, (git_odb_backend **out, const char *objects_dir), \
	  (out, objects_dir), -1) \
	F(int, odb_exists, (git_odb *db, const git_oid *id), (db, id), -1) \
	V(odb_free, (git_odb *db), (db)) \
	F(int, odb_new, (git_odb **out), (out), -1) \
	F(int, oid_cpy, (git_oid *out, const git_oid *src), (out, src), -1) \
	F(int, oid_equal, (const git_oid *a, const git_oid *b), (a, b), -1) \
	F(int, oid_fromstr, (git_oid *out, const char *str), (out, str), -1) \
	V(packbuilder_free, (git_packbuilder *pb), (pb)) \
	F(int, packbuilder_insert_walk, (git_packbuilder *pb, git_revwalk *walk), \
	  (pb, walk), -1) \
	F(int, packbuilder_new, (git_packbuilder **out, git_repository *repo), \
	  (out, repo), -1) \
	F(size_t, packbuilder_object_count, (git_packbuilder *pb), (pb), 0) \
	F(int, packbuilder_write, (git_packbuilder *pb, const char *path, \
	    unsigned int mode, git_indexer_progress_cb progress_cb, \
	    void *progress_cb_payload), \
	  (pb, path, mode, progress_cb, progress_cb_payload), -1) \
	F(int, reference_create, (git_reference **out, git_repository *repo, \
	    const char *name, const git_oid *id, int force, \
	    const char *log_message), \
	  (out, repo, name, id, force, log_message), -1) \
	V(reference_free, (git_reference *ref), (ref)) \
	F(int, reference_name_to_id, (git_oid *out, git_repository *repo, \
	    const char *name), \
	  (out, repo, name), -1) \
	F(int, reference_peel, (git_object **out, const git_reference *ref, \
	    git_object_t type), \
	  (out, ref, type), -1) \
	V(repository_free, (git_repository *repo), (repo)) \
	F(int, repository_head, (git_reference **out, git_repository *repo), \
	  (out, repo), -1) \
	F(int, repository_init_ext, (git_repository **out, const char *repo_path, \
	    git_repository_init_options *opts), \
	  (out, repo_path, opts), -1) \
	F(int, repository_init_options_init, (git_repository_init_options *opts, \
	    unsigned int version), \
	  (opts, version), -1) \
	F(int, repository_is_bare, (const git_repository *repo), (repo), -1) \
	F(int, repository_open_ext, (git_repository **out, const char *path, \
	    unsigned int flags, const char *ceiling_dirs), \
	  (out, path, flags, ceiling_dirs), -1) \
	F(const char *, repository_path, (const git_repository *repo), (repo), NULL) \
	V(revwalk_free, (git_revwalk *walk), (walk)) \
	F(int, revwalk_hide, (git_revwalk *walk, const git_oid *commit_id), \
	  (walk, commit_id), -1) \
	F(int, revwalk_new, (git_revwalk **out, git_repository *repo), \
	  (out, repo), -1) \
	F(int, revwalk_next, (git_oid *out, git_revwalk *walk), (out, walk), -1) \
	F(int, revwalk_push, (git_revwalk *walk, const git_oid *id), (walk, id), -1) \
	F(int, revwalk_push_head, (git_revwalk *walk), (walk), -1) \
	F(int, revwalk_reset, (git_revwalk *walker), (walker), -1) \
	F(int, revwalk_sorting, (git_revwalk *walk, unsigned int sort_mode), \
	  (walk, sort_mode), -1) \
	V(signature_free, (git_signature *sig), (sig)) \
	F(int, signature_new, (git_signature **out, const char *name, \
	    const char *email, git_time_t time, int offset), \
	  (out, name, email, time, offset), -1) \
	F(const git_tree_entry *, tree_entry_byindex, (const git_tree *tree, size_t idx), \
	  (tree, idx), NULL) \
	F(const git_tree_entry *, tree_entry_byname, (const git_tree *tree, \
	    const char *filename), \
	  (tree, filename), NULL) \
	F(int, tree_entry_bypath, (git_tree_entry **out, const git_tree *root, \
	    const char *path), \
	  (out, root, path), -1) \
	V(tree_entry_free, (git_tree_entry *entry), (entry)) \
	F(const git_oid *, tree_entry_id, (const git_tree_entry *entry), \
	  (entry), NULL) \
	F(const char *, tree_entry_name, (const git_tree_entry *entry), (entry), NULL) \
	F(size_t, tree_entrycount, (const git_tree *tree), (tree), 0) \
	V(tree_free, (git_tree *tree), (tree)) \
	F(int, tree_lookup, (git_tree **out, git_repository *repo, const git_oid *id), \
	  (out, repo, id), -1) \
	F(size_t, treebuilder_entrycount, (git_treebuilder *bld), (bld), 0) \
	V(treebuilder_free, (git_treebuilder *bld), (bld)) \
	F(const git_tree_entry *, treebuilder_get, (git_treebuilder *bld, \
	    const char *filename), \
	  (bld, filename), NULL) \
	F(int, treebuilder_insert, (const git_tree_entry **out, git_treebuilder *bld, \
	    const char *filename, const git_oid *id, git_filemode_t filemode), \
	  (out, bld, filename, id, filemode), -1) \
	F(int, treebuilder_new, (git_treebuilder **out, git_repository *repo, \
	    const git_tree *source), \
	  (out, repo, source), -1) \
	F(int, treebuilder_remove, (git_treebuilder *bld, const char *filename), \
	  (bld, filename), -1) \
	F(int, treebuilder_write, (git_oid *id, git_treebuilder *bld), (id, bld), -1)

#define PTR(ret, name, params, args, fail) ret(*name) params;
#define VPTR(name, params, args) void(*name) params;
static struct {
	GIT_FUNCS(PTR, VPTR)
} fn;

#define SLOT(ret, name, params, args, fail) \
	{ "git_" #name, offsetof(__typeof__(fn), name) },
#define VSLOT(name, params, args) { "git_" #name, offsetof(__typeof__(fn), name) },
static const struct {
	const char *sym;
	size_t off;
} slots[] = { GIT_FUNCS(SLOT, VSLOT) };

static git_error load_failure = { .message = "libgit2 could not be loaded",
				  .klass = GIT_ERROR_OS };
static char load_msg[512]; /* dlerror's text, which its next call frees */
static bool loaded, tried;

static bool load(void)
{
	void *lib;

	if (loaded || tried)
		return loaded;
	tried = true;
	lib = dlopen(KT_LIBGIT2_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(load_msg, sizeof(load_msg), "%s", dlerror());
		load_failure.message = load_msg;
		return false;
	}
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		void *f = dlsym(lib, slots[i].sym);

		if (!f) {
	load_failure.message = "a function is missing from " KT_LIBGIT2_SONAME;
			return false;
		}
		*(void **)((char *)&fn + slots[i].off) = f;
	}
	loaded = true;
	return true;
}

#define WRAP(ret, name, params, args, fail) \
	ret git_##name params \
	{ \
		return load() ? fn.name args : (fail); \
	}
#define VWRAP(name, params, args) \
	void git_##name params \
	{ \
		if (load()) \
			fn.name args; \
	}
GIT_FUNCS(WRAP, VWRAP)
