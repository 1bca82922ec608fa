"""Hugging Face Hub snapshots of BERT in and out, with no PyTorch installed.

    python -m bert_tf.hf import --hf_dir=SNAPSHOT --output_dir=GOOGLE_FOLDER
    python -m bert_tf.hf export --checkpoint=CKPT --bert_config_file=... --vocab_file=... \\
        --do_lower_case=... --output_dir=HUB_FOLDER [--task=pretraining|classifier|squad|tagging|encoder]

Modules, one job each: `names` (the table of Hub names and the original's TF1 names, the
architectures and the config keys), `safetensors_io` (reading with every header checked,
writing with the `safetensors` package), `torch_zip` (`pytorch_model.bin` read by an
unpickler that accepts only the globals of a tensor checkpoint), `tokenizer_files`
(vocab.txt from tokenizer.json, the tokenizer settings, the Hub tokenizer files), `snapshot`
(a snapshot folder -> config and tensors under the original names), `convert` (the two
conversions and the `from_pretrained` loaders), `__main__` (the command line). See docs/hub.md.
"""


class HubError(ValueError):
    """A snapshot, checkpoint or folder that cannot be converted; the message names the file
    and the tensor or key, and what was expected."""
