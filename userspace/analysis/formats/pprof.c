// SPDX-License-Identifier: MIT
/*
 * pprof.c - stack samples as a pprof profile (pprof.h).  The messages are
 * encoded by libprotobuf-c (Debian's protobuf C runtime, from
 * proto/profile.proto) and gzip'd with zlib, which pprof readers expect.
 *
 * One Function and one Location per distinct frame name (the record keeps
 * names, not addresses: it is read where the binaries are not), one
 * Sample per stack, leaf first, with "stage" and "attribution" labels.
 * A Function's name is the symbol demangled whole (demangle.h), its
 * system_name the symbol as the file has it, as profile.proto defines them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "pprof.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__ValueType ValueType;

/*
 * Fixed strings first; the demangled frame names follow at FIRST_NAME +
 * their index, then the symbols that differ from their demangled name.
 */
enum {
	STR_EMPTY, STR_SAMPLES, STR_COUNT, STR_CPU, STR_NANOSECONDS, STR_STAGE,
	STR_ATTRIBUTION, STR_ROOT, STR_DECODED, STR_NO_STAGE, FIRST_STAGE,
	FIRST_NAME = FIRST_STAGE + KH_STAGE_COUNT
};

static const char *const fixed[FIRST_STAGE] = {
	"", "samples", "count", "cpu", "nanoseconds", "stage", "attribution", "root",
	"decoded", "(no stage)",
};

/* gzip (deflate with a gzip header: windowBits 16 + 15) of n bytes. */
static unsigned char *gzip(const unsigned char *in, size_t n, size_t *len)
{
	z_stream z;
	unsigned char *out;
	size_t cap = compressBound((uLong)n) + 64;

	memset(&z, 0, sizeof(z));
	out = malloc(cap);
	if (!out || deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY)) {
		free(out);
		return NULL;
	}
	z.next_in = (unsigned char *)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(out);
		return NULL;
	}
	*len = z.total_out;
	deflateEnd(&z);
	return out;
}

/* The run's start from its run id, "{pid}-{unix_ns}-{sequence}"; 0 if not in that form. */
static int64_t start_unix_ns(const struct kh_profile *p)
{
	const char *id = p->identity.run_id, *dash = id ? strchr(id, '-') : NULL;

	return dash ? (int64_t)strtoull(dash + 1, NULL, 10) : 0;
}

unsigned char *profile__to_pprof(const struct kh_profile *p, size_t *len)
{
	const struct kh_stacks *s = &p->ext.stacks;
	struct kh_stacks shown = { 0 };
	uint32_t *shown_of = NULL;
	Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	ValueType types[2] = { PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
			       PERFTOOLS__PROFILES__VALUE_TYPE__INIT };
	ValueType period = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	ValueType *type_ptrs[2] = { &types[0], &types[1] };
	size_t n_names = s->name_count, n_stacks = s->stack_count, packed_len;
	size_t n_strings = FIRST_NAME;
	char **strings = calloc(FIRST_NAME + 2 * n_names, sizeof(*strings));
	Function *fns = calloc(n_names ? n_names : 1, sizeof(*fns));
	Function **fn_ptrs = calloc(n_names ? n_names : 1, sizeof(*fn_ptrs));
	Location *locs = calloc(n_names ? n_names : 1, sizeof(*locs));
	Location **loc_ptrs = calloc(n_names ? n_names : 1, sizeof(*loc_ptrs));
	Line *lines = calloc(n_names ? n_names : 1, sizeof(*lines));
	Line **line_ptrs = calloc(n_names ? n_names : 1, sizeof(*line_ptrs));
	Sample *samples = calloc(n_stacks ? n_stacks : 1, sizeof(*samples));
	Sample **sample_ptrs = calloc(n_stacks ? n_stacks : 1, sizeof(*sample_ptrs));
	Label *labels = calloc(2 * (n_stacks ? n_stacks : 1), sizeof(*labels));
	Label **label_ptrs = calloc(2 * (n_stacks ? n_stacks : 1), sizeof(*label_ptrs));
	int64_t *values = calloc(2 * (n_stacks ? n_stacks : 1), sizeof(*values));
	uint64_t *ids = NULL;
	unsigned char *packed = NULL, *zipped = NULL;
	int64_t period_ns = s->rate_hz ? (int64_t)(1000000000ull / s->rate_hz) : 0;
	size_t total_frames = 0, at = 0;

	*len = 0;
	if (!s->present) {
		errno = EINVAL;
		goto out;
	}
	if (kh_stacks__shown(s, KH_NAMES_DEMANGLED, &shown, &shown_of)) {
		errno = ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n_stacks; i++)
		total_frames += s->stacks[i].frame_count;
	ids = calloc(total_frames ? total_frames : 1, sizeof(*ids));
	if (!strings || !fns || !fn_ptrs || !locs || !loc_ptrs || !lines || !line_ptrs ||
	    !samples || !sample_ptrs || !labels || !label_ptrs || !values || !ids) {
		errno = ENOMEM;
		goto out;
	}
	for (int i = 0; i < FIRST_STAGE; i++)
		strings[i] = (char *)fixed[i];
	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++)
		strings[FIRST_STAGE + st] = (char *)kh_stage__name(st);
	for (size_t i = 0; i < shown.name_count; i++)
		strings[n_strings++] = shown.names[i];
	for (size_t i = 0; i < n_names; i++) {
		perftools__profiles__function__init(&fns[i]);
		fns[i].id = i + 1;
		fns[i].name = fns[i].system_name = (int64_t)(FIRST_NAME + shown_of[i]);
		if (strcmp(s->names[i], shown.names[shown_of[i]])) {
			fns[i].system_name = (int64_t)n_strings;
			strings[n_strings++] = s->names[i];
		}
		fn_ptrs[i] = &fns[i];
		perftools__profiles__line__init(&lines[i]);
		lines[i].function_id = i + 1;
		line_ptrs[i] = &lines[i];
		perftools__profiles__location__init(&locs[i]);
		locs[i].id = i + 1;
		locs[i].n_line = 1;
		locs[i].line = &line_ptrs[i];
		loc_ptrs[i] = &locs[i];
	}
	for (size_t i = 0; i < n_stacks; i++) {
		const struct kh_stack *st = &s->stacks[i];
		Sample *smp = &samples[i];
		Label *stage = &labels[2 * i], *attribution = &labels[2 * i + 1];

		perftools__profiles__sample__init(smp);
		/* Leaf first, as pprof orders a sample's locations. */
		smp->location_id = &ids[at];
		for (uint32_t f = st->frame_count; f-- > 0;)
			ids[at++] = (uint64_t)st->frames[f] + 1;
		smp->n_location_id = st->frame_count;
		values[2 * i] = (int64_t)st->count;
		values[2 * i + 1] = (int64_t)st->count * period_ns;
		smp->value = &values[2 * i];
		smp->n_value = 2;
		perftools__profiles__label__init(stage);
		stage->key = STR_STAGE;
		stage->str = st->stage < KH_STAGE_COUNT ? FIRST_STAGE + (int64_t)st->stage
							 : STR_NO_STAGE;
		perftools__profiles__label__init(attribution);
		attribution->key = STR_ATTRIBUTION;
		attribution->str = st->attribution == KH_ATTRIBUTION_DECODED ? STR_DECODED : STR_ROOT;
		label_ptrs[2 * i] = stage;
		label_ptrs[2 * i + 1] = attribution;
		smp->label = &label_ptrs[2 * i];
		smp->n_label = 2;
		sample_ptrs[i] = smp;
	}
	types[0].type = STR_SAMPLES;
	types[0].unit = STR_COUNT;
	types[1].type = STR_CPU;
	types[1].unit = STR_NANOSECONDS;
	period.type = STR_CPU;
	period.unit = STR_NANOSECONDS;
	prof.n_sample_type = 2;
	prof.sample_type = type_ptrs;
	prof.n_sample = n_stacks;
	prof.sample = sample_ptrs;
	prof.n_location = n_names;
	prof.location = loc_ptrs;
	prof.n_function = n_names;
	prof.function = fn_ptrs;
	prof.n_string_table = n_strings;
	prof.string_table = strings;
	prof.time_nanos = start_unix_ns(p);
	prof.duration_nanos = (int64_t)p->wall_time_ns;
	prof.period_type = &period;
	prof.period = period_ns;
	prof.default_sample_type = STR_CPU;
	packed_len = perftools__profiles__profile__get_packed_size(&prof);
	packed = malloc(packed_len ? packed_len : 1);
	if (!packed) {
		errno = ENOMEM;
		goto out;
	}
	perftools__profiles__profile__pack(&prof, packed);
	zipped = gzip(packed, packed_len, len);
	if (!zipped)
		errno = ENOMEM;
out:
	kh_stacks__free(&shown);
	free(shown_of);
	free(strings);
	free(fns);
	free(fn_ptrs);
	free(locs);
	free(loc_ptrs);
	free(lines);
	free(line_ptrs);
	free(samples);
	free(sample_ptrs);
	free(labels);
	free(label_ptrs);
	free(values);
	free(ids);
	free(packed);
	return zipped;
}
