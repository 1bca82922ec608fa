"""TensorBoard scalars without the `tensorboard` package.

`tf.summary.scalar` lives in the tensorboard package, which TensorFlow does not install; the
event files only need TensorFlow's own `tf.summary.write` with the scalar plugin's metadata,
which is what this writes. TensorBoard (installed wherever the logs are viewed) reads them as
ordinary scalars.
"""

import contextlib

import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from bert_tf import files

_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
    data_class=summary_pb2.DATA_CLASS_SCALAR,
).SerializeToString()


def scalar(name, value, step):
    """Writes a float32 scalar to the default summary writer (use inside `writer.as_default()`)."""
    return tf.summary.write(
        name, tf.constant(float(value), tf.float32), step=step, metadata=_SCALAR_METADATA
    )


class ScalarWriter:
    """A TensorBoard event-file writer for scalars under `logdir`. A full disk is a
    `files.OutputError` naming the directory (event files are appended to, so what was
    written before stays readable)."""

    def __init__(self, logdir):
        self.logdir = logdir
        self._writer = tf.summary.create_file_writer(logdir)

    @contextlib.contextmanager
    def _full_disk_is_one_line(self):
        try:
            yield
        except tf.errors.OpError as e:
            if not files.is_out_of_space(e):
                raise
            raise files.OutputError(files.out_of_space_message(
                f"TensorBoard events in {self.logdir}", self.logdir)) from None

    def write(self, step, values):
        """values: {name: float}, all at `step`."""
        with self._full_disk_is_one_line(), self._writer.as_default():
            for name, value in values.items():
                scalar(name, value, step)

    def flush(self):
        with self._full_disk_is_one_line():
            self._writer.flush()
