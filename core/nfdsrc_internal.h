/* nfdsrc's internals: what its files share (nfdsrc_util.c) and the sources
 * the registry in nfdsrc.c lists (one file each). Not for other modules. */
#ifndef FB_NFDSRC_INTERNAL_H
#define FB_NFDSRC_INTERNAL_H

#include "nfdsrc.h"

#include <stddef.h>
#include <sys/types.h>

#define NLOG_I(lg, ...) do { if (lg) LOG_I(lg, __VA_ARGS__); } while (0)
#define NLOG_W(lg, ...) do { if (lg) LOG_W(lg, __VA_ARGS__); } while (0)
#define NLOG_E(lg, ...) do { if (lg) LOG_E(lg, __VA_ARGS__); } while (0)
#define NLOG_V(lg, n, ...) do { if (lg) LOG_V(lg, n, __VA_ARGS__); } while (0)

#define FILE_CAP (4u << 20) /* kernel configs are ~300 KiB */
#define ATTR_SIZE 256

/* The sources of the registry, one per file. */
extern const struct nfdsrc_source nfdsrc_cpu_source_, nfdsrc_custom_source_, nfdsrc_fake_source_, nfdsrc_kernel_source_,
	nfdsrc_local_source_, nfdsrc_memory_source_, nfdsrc_network_source_, nfdsrc_pci_source_,
	nfdsrc_storage_source_, nfdsrc_system_source_, nfdsrc_usb_source_;

/* Go's unicode.IsSpace for ASCII. */
int nfdsrc_is_space_(char c);
/* Go's strings.TrimSpace, in place (ASCII whitespace). Returns the length. */
size_t nfdsrc_trim_(char *s);
/* A small attribute below dfd (attr_read), trimmed. Returns its length or
 * an error of attr_read. */
ssize_t nfdsrc_attr_at_(int dfd, const char *name, char *buf, size_t size);
/* The same for <host>/rel, or -FB_E2BIG when the path is too long. */
ssize_t nfdsrc_host_attr_(const struct hostfs *h, const char *rel, char *buf, size_t size);
/* A whole regular host file of under FILE_CAP bytes in a new buffer
 * (sysfs_read_alloc). */
ssize_t nfdsrc_host_file_(const struct hostfs *h, const char *rel, char **out);
/* The first size-1 bytes (or all) of a regular host file, NUL-terminated, in
 * a new buffer: /proc/cpuinfo of a big host is megabytes the kernel makes on
 * each read, and only its first processor is used. */
ssize_t nfdsrc_host_head_(const struct hostfs *h, const char *rel, size_t size, char **out);
/* 1 when the host path exists (following links), 0 when it does not, or
 * -FB_EIO for any other stat failure. */
int nfdsrc_host_exists_(const struct hostfs *h, const char *rel);
/* <host>/rel opened as a directory: an fd, -FB_ENOENT or -FB_EIO. */
int nfdsrc_host_opendir_(const struct hostfs *h, const char *rel);

/* Directory entries (all but . and ..) sorted by name, as Go's os.ReadDir;
 * v and its strings are owned. Zeroed is empty. */
struct nfdsrc_names {
	char **v;
	size_t n, size;
};
void nfdsrc_names_free_(struct nfdsrc_names *nm);
/* Appends a copy of s. Returns 0 or -FB_ENOMEM. */
int nfdsrc_names_push_(struct nfdsrc_names *nm, const char *s);
/* Lists <host>/rel into nm; *dfd (when not NULL) gets the directory, open.
 * Returns 0, or -FB_ENOENT/-FB_EIO/-FB_ENOMEM. */
int nfdsrc_host_list_(const struct hostfs *h, const char *rel, int *dfd, struct nfdsrc_names *nm);

/* Adds "feature.node.kubernetes.io/<src>-<name>" = value when labels is set.
 * A name too long for any valid label is dropped with the same log line the
 * filter would write, rather than cut. Returns 0 or -FB_ENOMEM. */
int nfdsrc_label_(struct json *labels, const char *src, const char *name, const char *value,
		  const struct fb_log *lg);
int nfdsrc_label_true_(struct json *labels, const char *src, const char *name,
		       const struct fb_log *lg);
/* Upstream's regexp.ReplaceAllString("[^-A-Za-z0-9_.]+", "_"), in place. */
void nfdsrc_squash_invalid_(char *s);
/* s as a whole number in base, or def when it is empty, NULL or not one. */
long nfdsrc_num_(const char *s, int base, long def);
int nfdsrc_list_has_(const struct nfdsrc_list *l, const char *s);

/* cpu.cpuid (nfdsrc_cpuid.c): what upstream publishes for this CPU, from
 * the register dump <proc>/.featurebox-cpuid when the host root has one (test
 * fixtures; a real procfs cannot), else from the running CPU. An unreadable
 * or malformed dump is logged and gives an empty info (arch unknown).
 * Returns 0 or -FB_ENOMEM. */
struct cpuid_info;
int nfdsrc_cpuid_read_(const struct hostfs *h, struct cpuid_info *out, int *x86, const struct fb_log *lg);

/* pci and usb device labels. The label fields upstream uses: the configured
 * ones that are valid, in canonical order whatever the config order; none
 * valid: the fallback. Writes indexes into canon[] to out and returns their
 * count. */
size_t nfdsrc_label_fields_(const struct nfdsrc_list *cfg, const char *const *canon, size_t ncanon,
			    const size_t *fallback, size_t nfallback, size_t *out, const char *src,
			    const struct fb_log *lg);
/* Prefix match of class against the lower-cased whitelist entries. */
int nfdsrc_class_listed_(const struct nfdsrc_list *wl, const char *cls);
/* "<v0>_<v1>_...": the device label of upstream's GetLabels. 0 or -FB_E2BIG. */
int nfdsrc_device_label_(char *buf, size_t size, const char *const *vals, const size_t *idx,
			 size_t n);
/* s without a leading "0x". */
const char *nfdsrc_no0x_(const char *s);

#endif
