"""Events, along client-go's lines: one module per job.

* ``objects``: what both event APIs share (the object an event is about, names, timestamps).
* ``sender``: the queue and the sender tasks that write recorded events off the hot path,
  their retries, and the count of events not written.
* ``recorder``: events.k8s.io/v1 (client-go's ``tools/events``), the scheduler's: series.
* ``core``: core/v1 (client-go's ``tools/record``), the operator's: posted at once,
  through ``correlator`` (aggregation and spam filter, ``events_cache.go``).

What an event *says* belongs to its reporter (the scheduler's reasons are in
``scheduler/events.py``).
"""
