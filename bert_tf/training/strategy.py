"""Choosing the tf.distribute strategy from the command line (`--strategy`, `--use_tpu`)."""

import json
import os

import tensorflow as tf
from absl import logging

STRATEGIES = ("default", "one_device", "mirrored", "multi_worker_mirrored", "tpu")


class StrategyError(ValueError):
    """A strategy that cannot be created here (no TPU reachable, no TF_CONFIG, ...)."""


def resolve_strategy_name(strategy, use_tpu=False):
    """`--use_tpu` implies `tpu`; asking for another strategy with it is an error."""
    if strategy not in STRATEGIES:
        raise StrategyError(f"--strategy={strategy!r}: expected one of {', '.join(STRATEGIES)}")
    if use_tpu:
        if strategy not in ("default", "tpu"):
            raise StrategyError(f"--use_tpu conflicts with --strategy={strategy}")
        return "tpu"
    return strategy


def create_strategy(name, tpu_name=None, tpu_zone=None, gcp_project=None, master=None,
                    num_tpu_cores=None):
    """Returns the tf.distribute.Strategy for `name` (one of STRATEGIES).

    - default: TensorFlow's default (no distribution; one replica on the default device).
    - one_device: the first GPU, else the CPU.
    - mirrored: every visible GPU; without GPUs every logical CPU device (split the CPU with
      tf.config.set_logical_device_configuration to get several).
    - multi_worker_mirrored: the cluster of the TF_CONFIG environment variable.
    - tpu: resolved from tpu_name (or master), tpu_zone and gcp_project.
    Must be called before TensorFlow runs any op (multi-worker and TPU need that).
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if name == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices=devices)
    if name == "multi_worker_mirrored":
        return _multi_worker_strategy()
    if name == "tpu":
        return _tpu_strategy(tpu_name, tpu_zone, gcp_project, master, num_tpu_cores)
    raise StrategyError(f"unknown strategy {name!r}: expected one of {', '.join(STRATEGIES)}")


def _multi_worker_strategy():
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise StrategyError(
            "--strategy=multi_worker_mirrored needs the TF_CONFIG environment variable "
            '(e.g. {"cluster": {"worker": ["host1:port", "host2:port"]}, '
            '"task": {"type": "worker", "index": 0}})'
        )
    try:
        config = json.loads(raw)
        workers = config["cluster"]["worker"]
        task = config["task"]
        task["type"], int(task["index"])
    except (ValueError, KeyError, TypeError) as e:
        raise StrategyError(
            f"TF_CONFIG is not a valid cluster spec with a 'worker' job and a task ({e})"
        ) from None
    if not workers:
        raise StrategyError("TF_CONFIG: the 'worker' job lists no address")
    return tf.distribute.MultiWorkerMirroredStrategy()


def _tpu_strategy(tpu_name, tpu_zone, gcp_project, master, num_tpu_cores):
    tpu = tpu_name or master
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu=tpu, zone=tpu_zone, project=gcp_project
        )
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
    except Exception as e:  # the resolver raises ValueError, RuntimeError or OpErrors
        where = f"--tpu_name={tpu_name!r}" if tpu_name else (
            f"--master={master!r}" if master else "no --tpu_name (looked for a local TPU)")
        raise StrategyError(
            f"no TPU reachable ({where}, --tpu_zone={tpu_zone!r}, --gcp_project={gcp_project!r}):"
            f" {_first_line(e)}"
        ) from None
    if num_tpu_cores and strategy.num_replicas_in_sync != num_tpu_cores:
        logging.warning(
            "--num_tpu_cores=%d but the TPU has %d cores; using all of them",
            num_tpu_cores, strategy.num_replicas_in_sync,
        )
    return strategy


def worker_info(strategy):
    """(task_index, num_workers, is_chief) of this process under `strategy`."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) and resolver is not None:
        spec = resolver.cluster_spec().as_dict()
        num_workers = len(spec.get("worker", [])) + len(spec.get("chief", []))
        task_type, task_id = resolver.task_type, resolver.task_id or 0
        if "chief" in spec:
            index = 0 if task_type == "chief" else task_id + 1
        else:
            index = task_id
        is_chief = task_type == "chief" or (task_type == "worker" and task_id == 0
                                            and "chief" not in spec)
        return index, max(num_workers, 1), is_chief
    return 0, 1, True


def _first_line(error):
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
