/* SPDX-License-Identifier: MIT */
/*
 * browser.h - opening khprof's HTML pages in a real headless Chromium
 * (Debian's chromium, or $KH_CHROMIUM): the DOM it built, the console
 * messages it logged, and a screenshot decoded with libpng.
 *
 * Chromium logs every console message (errors, failed loads, script
 * exceptions) on stderr as "...:INFO:CONSOLE..." with --enable-logging=stderr
 * --v=0; khprof's pages run no script and load nothing, so any such line
 * is a failure.
 */
#ifndef KHPROF_TEST_BROWSER_H
#define KHPROF_TEST_BROWSER_H

#include <png.h>

#include "khtest.h"

static inline char *chromium_path(void)
{
	const char *env = getenv("KH_CHROMIUM");
	char *path = strdup(env && *env ? env : "/usr/bin/chromium");

	assert_non_null(path);
	return path;
}

struct page_view {
	char *dom;      /* --dump-dom: the DOM after loading */
	char *console;  /* the console lines Chromium logged, "" when none */
};

/*
 * Runs Chromium on file://path with the flags of a quiet, isolated headless
 * session (a new profile directory, no background networking) plus extra
 * (one more flag), and returns what it printed.  Fails the test when
 * Chromium does not exit 0.
 */
static inline struct run_result chromium_run(const char *path, const char *extra)
{
	char *browser = chromium_path(), *profile = make_temp_dir("khprof-chromium");
	char *user_dir, *url, *real = realpath(path, NULL);
	struct run_result r;

	assert_non_null(profile);
	assert_non_null(real);
	assert_true(asprintf(&user_dir, "--user-data-dir=%s", profile) > 0);
	assert_true(asprintf(&url, "file://%s", real) > 0);
	{
		char *argv[] = { browser, "--headless=new", "--no-sandbox", "--disable-gpu",
				 "--no-first-run", "--disable-background-networking",
				 "--disable-component-update", "--disable-sync",
				 "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
				 "--window-size=1280,1800", user_dir, (char *)extra, url, NULL };

		r = run_cmd(NULL, -1, argv);
	}
	if (r.exit_code != 0)
		fail_msg("chromium exited %d on %s: %s", r.exit_code, path, r.err);
	remove_tree(profile);
	free(profile);
	free(user_dir);
	free(url);
	free(real);
	free(browser);
	return r;
}

/* The lines of text that contain needle, joined; "" when none. */
static inline char *lines_with(const char *text, const char *needle)
{
	size_t cap = strlen(text) + 1, len = 0;
	char *out = calloc(1, cap);
	const char *line = text;

	assert_non_null(out);
	while (*line) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
		char *hit = memmem(line, n, needle, strlen(needle));

		if (hit) {
			memcpy(out + len, line, n);
			len += n;
		}
		line += n;
	}
	out[len] = 0;
	return out;
}

static inline struct page_view page_open(const char *path)
{
	struct run_result r = chromium_run(path, "--dump-dom");
	struct page_view v = { .dom = r.out, .console = lines_with(r.err, ":CONSOLE") };

	free(r.err);
	return v;
}

static inline void page_view_free(struct page_view *v)
{
	free(v->dom);
	free(v->console);
}

/* How many times needle occurs in text. */
static inline size_t count_of(const char *text, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

struct png_stats {
	unsigned width, height;
	size_t colours;        /* distinct RGB values (saturates at 4096) */
	double non_white_pct;  /* pixels that are not near-white */
};

/*
 * Screenshots path at 1280x1800 and decodes the PNG: a blank or failed
 * render is one colour, a rendered page has text and charts.
 */
static inline struct png_stats page_screenshot(const char *path, const char *png_path)
{
	char *flag;
	struct run_result r;
	struct png_stats s = { 0 };
	png_image image;
	png_bytep pixels;
	uint32_t *seen;
	size_t non_white = 0;

	assert_true(asprintf(&flag, "--screenshot=%s", png_path) > 0);
	unlink(png_path);
	r = chromium_run(path, flag);
	run_result_free(&r);
	free(flag);

	memset(&image, 0, sizeof(image));
	image.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_file(&image, png_path))
		fail_msg("cannot read screenshot '%s': %s", png_path, image.message);
	image.format = PNG_FORMAT_RGB;
	pixels = malloc(PNG_IMAGE_SIZE(image));
	assert_non_null(pixels);
	if (!png_image_finish_read(&image, NULL, pixels, 0, NULL))
		fail_msg("cannot decode screenshot '%s': %s", png_path, image.message);
	s.width = image.width;
	s.height = image.height;
	seen = calloc(4096, sizeof(*seen));
	assert_non_null(seen);
	for (size_t i = 0; i < (size_t)image.width * image.height; i++) {
		const png_byte *px = pixels + 3 * i;
		uint32_t rgb = (uint32_t)px[0] << 16 | (uint32_t)px[1] << 8 | px[2];
		size_t k;

		if (px[0] < 240 || px[1] < 240 || px[2] < 240)
			non_white++;
		/* A small open-addressed set of the colours seen so far. */
		for (k = (rgb * 2654435761u) % 4096; seen[k] && seen[k] != rgb + 1; k = (k + 1) % 4096)
			;
		if (!seen[k] && s.colours < 4000) {
			seen[k] = rgb + 1;
			s.colours++;
		}
	}
	s.non_white_pct = 100.0 * (double)non_white / ((double)image.width * image.height);
	free(seen);
	free(pixels);
	png_image_free(&image);
	return s;
}

#endif /* KHPROF_TEST_BROWSER_H */
