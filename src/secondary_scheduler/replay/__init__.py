"""`secsched replay`: a workload replayed over a cluster in simulated time, per scheduler profile.

The trace (``trace``) streams pod arrivals and usage samples; the engine (``engine``) drives a
simulated clock (``clock``) over them, schedules every pod with the scheduler's own framework
and plugins against a simulated cluster (``cluster``) whose load-aware plugins read simulated
metrics (``metrics``), and the report (``report``, ``plots``) measures what each profile did.
"""
