"""The runner an evaluation's calls get from its settings and thread count."""

from tasks.core.runners import RunnerSettings, runner_for_calls


def test_no_settings_is_a_pool_of_the_threads_in_this_process():
    assert runner_for_calls(None, 32) == RunnerSettings(kind="threads", max_workers=32)


def test_each_process_of_a_local_cluster_gets_every_thread():
    local = RunnerSettings(kind="dask", dask_workers=2)
    assert runner_for_calls(local, 32) == RunnerSettings(kind="dask", dask_workers=2, dask_threads=32)


def test_thread_counts_given_and_a_running_cluster_are_left_as_they_are():
    given = RunnerSettings(kind="dask", dask_workers=2, dask_threads=3)
    running = RunnerSettings(kind="dask", dask_address="tcp://10.0.0.5:8786")
    pool = RunnerSettings(kind="threads", max_workers=5)
    assert [runner_for_calls(settings, 32) for settings in (given, running, pool)] == [given, running, pool]
