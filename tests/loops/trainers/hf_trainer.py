"""transformers' own Trainer on a tiny GPT-2 and a synthetic dataset, an evaluation per epoch, the model compiled:
run as `neurondev watch hf_trainer.py openxla` (PJRT_DEVICE=CPU) or `... hf_trainer.py aot_eager` (the host device).

Before each call of the compiled model, and once after training, the script writes down the runtime's own counts:
dynamo's graphs (its counters), torch_xla's programs (its CompileTime metric) or the host device's log (its copies to
the device and to the host). It prints them as one JSON line, the record a watch's steps are checked against."""

import os
import sys

import torch
from runtime_record import print_record, record_each_call
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

backend = sys.argv[1] if len(sys.argv) > 1 else "openxla"
if backend != "openxla":  # the host device: a PrivateUse1 accelerator, which accelerate picks as it would TorchNeuron's
    import neurondev

    os.environ["ACCELERATE_TORCH_DEVICE"] = neurondev.host_device().type  # a device transformers does not list


torch.manual_seed(0)
config = GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=32, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(config)
compiled = torch.compile(model, backend=backend)  # accelerate knows no 'openxla': the model compiled as a user does
record_each_call(compiled, backend)


class Tokens(torch.utils.data.Dataset):
    def __init__(self, count):
        self.ids = torch.randint(0, 64, (count, 16), generator=torch.Generator().manual_seed(count))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        return {"input_ids": self.ids[index], "labels": self.ids[index]}


arguments = TrainingArguments(
    output_dir=os.environ.get("OUT_DIR", "out"),
    num_train_epochs=2,
    per_device_train_batch_size=4,
    per_device_eval_batch_size=4,
    eval_strategy="epoch",
    save_strategy="no",
    logging_strategy="no",
    report_to=[],
    dataloader_drop_last=True,
    remove_unused_columns=False,
    optim="adamw_torch",
    disable_tqdm=True,
)
trainer = Trainer(model=compiled, args=arguments, train_dataset=Tokens(12), eval_dataset=Tokens(8))
trainer.train()
print_record(backend)
