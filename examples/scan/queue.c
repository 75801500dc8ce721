/* SPDX-License-Identifier: MIT */
/*
 * Bounded chunk queue.  The bound is what turns a slow scanner into
 * back-pressure on the reader instead of unbounded memory; the time each
 * side spends blocked is exactly what the queue-wait spans measure.
 */
#include <stdlib.h>

#include "keyhog_profile.h"
#include "kh_scan.h"

int chunk_queue_init(struct chunk_queue *queue, size_t capacity)
{
	queue->slots = calloc(capacity, sizeof(*queue->slots));
	if (!queue->slots)
		return -1;
	queue->capacity = capacity;
	queue->head = 0;
	queue->count = 0;
	queue->closed = false;
	pthread_mutex_init(&queue->lock, NULL);
	pthread_cond_init(&queue->not_empty, NULL);
	pthread_cond_init(&queue->not_full, NULL);
	return 0;
}

void chunk_queue_destroy(struct chunk_queue *queue)
{
	pthread_cond_destroy(&queue->not_full);
	pthread_cond_destroy(&queue->not_empty);
	pthread_mutex_destroy(&queue->lock);
	free(queue->slots);
	queue->slots = NULL;
}

void chunk_queue_push(struct chunk_queue *queue, struct chunk *chunk)
{
	pthread_mutex_lock(&queue->lock);
	if (queue->count == queue->capacity) {
		/* Only real blocking is a span: an uncontended push costs nothing. */
		KH_SPAN_ENTER(KH_STAGE_SOURCE_QUEUE_WAIT);
		while (queue->count == queue->capacity)
			pthread_cond_wait(&queue->not_full, &queue->lock);
		KH_SPAN_EXIT(KH_STAGE_SOURCE_QUEUE_WAIT);
	}
	queue->slots[(queue->head + queue->count) % queue->capacity] = chunk;
	queue->count++;
	pthread_cond_signal(&queue->not_empty);
	pthread_mutex_unlock(&queue->lock);
}

struct chunk *chunk_queue_pop(struct chunk_queue *queue)
{
	struct chunk *chunk = NULL;

	pthread_mutex_lock(&queue->lock);
	if (queue->count == 0 && !queue->closed) {
		KH_SPAN_ENTER(KH_STAGE_SCANNER_QUEUE_WAIT);
		while (queue->count == 0 && !queue->closed)
			pthread_cond_wait(&queue->not_empty, &queue->lock);
		KH_SPAN_EXIT(KH_STAGE_SCANNER_QUEUE_WAIT);
	}
	if (queue->count > 0) {
		chunk = queue->slots[queue->head];
		queue->head = (queue->head + 1) % queue->capacity;
		queue->count--;
		pthread_cond_signal(&queue->not_full);
	}
	pthread_mutex_unlock(&queue->lock);
	return chunk;
}

void chunk_queue_close(struct chunk_queue *queue)
{
	pthread_mutex_lock(&queue->lock);
	queue->closed = true;
	/* Every idle scanner must wake to see that no more work will come. */
	pthread_cond_broadcast(&queue->not_empty);
	pthread_mutex_unlock(&queue->lock);
}
