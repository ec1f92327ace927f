/*
 * Wrapper header for the jextract-generated libc bindings (lmcache4j.cuda.internal.libc).
 * Only a subset of it is extracted; see libc.args. Input to jextract only, not compiled.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/mempolicy.h>
