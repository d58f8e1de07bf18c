"""probe writes ORPO's and KTO's losses with the trainer's own operations, so that in bf16 its one-pass gradient is
the trainer's bit for bit (issue 33: v2 84 and 94 differed in the 3rd-4th digit of lora_B norms because another order
of the same sums rounds the fp32 logit gradient differently before autocast casts it back to bf16)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from mldebug_cli.probe.losses import LossParams, Sequences, TermSpec, term_values, trainer_sum  # noqa: E402

VOCAB = 8192


def _orpo_batch(seed: int):
    """Two pairs of right-padded rows (prompt tokens unlabelled) and bf16 logits over an 8192-token vocabulary (big
    enough that another order of the fp32 sums crosses a bf16 rounding boundary somewhere: the old order did)."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (4, 24), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, 17:] = 0
    mask[3, 9:] = 0
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :5] = -100
    logits = (torch.randn(4, 24, VOCAB, generator=generator) * 3).to(torch.bfloat16).requires_grad_()
    return ids, mask, labels, logits


def _trainer_gradient(ids, mask, labels, logits, beta: float):
    """TRL 1.16's ORPOTrainer on these logits: its own concatenated_forward (the model returns the logits as
    accelerate's prepared model does under bf16: cast to fp32) and odds_ratio_loss, composed as
    get_batch_loss_metrics composes them."""
    from trl.experimental.orpo.orpo_trainer import ORPOTrainer

    trainer = SimpleNamespace(is_encoder_decoder=False, padding_value=0, aux_loss_enabled=False, beta=beta,
                              accelerator=SimpleNamespace(device=torch.device("cpu")),
                              concatenated_inputs=ORPOTrainer.concatenated_inputs,
                              get_batch_logps=ORPOTrainer.get_batch_logps)
    batch = {"chosen_input_ids": ids[:2], "chosen_attention_mask": mask[:2], "chosen_labels": labels[:2],
             "rejected_input_ids": ids[2:], "rejected_attention_mask": mask[2:], "rejected_labels": labels[2:]}

    def model(input_ids, attention_mask, use_cache):
        return SimpleNamespace(logits=logits.float())

    chosen, rejected, _, _, nll = ORPOTrainer.concatenated_forward(trainer, model, batch)[:5]
    losses = ORPOTrainer.odds_ratio_loss(trainer, chosen, rejected)[0]
    loss = nll - losses.mean()
    logits.grad = None
    loss.backward()
    return float(loss), logits.grad.clone()


def _probe_gradient(ids, mask, labels, logits, beta: float):
    from mldebug_cli.probe.losses import sequences

    seq = sequences(logits, labels, [0, 1, 0, 1], whole=ids.masked_fill(mask == 0, -100))
    seq.outputs = SimpleNamespace(logits=logits)
    seq.inputs = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    specs = [TermSpec("nll", 1.0, "chosen label log-prob", None),
             TermSpec("orpo-odds-ratio", beta, "log odds ratio", "beta")]
    values = term_values("orpo", specs, seq, None, LossParams(beta=beta, upcast_logits=True))
    loss = trainer_sum(specs, values)
    logits.grad = None
    loss.backward()
    return float(loss), logits.grad.clone()


@pytest.mark.slow  # 0.7 CPU s each, and 5.7 to import TRL's experimental ORPO trainer
@pytest.mark.parametrize("seed, beta", [(0, 0.1), (1, 0.5), (2, 0.05)])
def test_orpo_in_bf16_takes_the_trainers_gradient_bit_for_bit(seed, beta):
    # (the order probe had before, one log_softmax of a sliced fp32 copy for both terms, differed from the trainer's
    # in 9-20 of these 786,432 bf16 gradient elements)
    batch = _orpo_batch(seed)
    expected_loss, expected = _trainer_gradient(*batch, beta)
    loss, grad = _probe_gradient(*batch, beta)
    assert loss == expected_loss
    assert grad.dtype == torch.bfloat16 and torch.equal(grad, expected)


def test_kto_keeps_its_kl_rows_a_batch_of_their_own_and_drops_them_without_an_estimate():
    from mldebug_cli.pipelines.probe import _kto_batch

    chunk = [([1, 2, 3, 4], [-100, -100, 3, 4], True), ([5, 6, 7, 8, 9, 10], [-100, 6, 7, 8, 9, 10], False)]
    batch = _kto_batch(chunk, [0, 1], None, "cpu", kl=True)
    # the trainer's main batch: the rows alone, padded to the longest of them (6), not to a KL row's length
    assert batch.input_ids.shape == (2, 6) and batch.rows == [0, 1]
    assert batch.desirable.tolist() == [True, False]
    # KL rows: each prompt with the previous row's completion (the first with the last's)
    assert batch.kl is not None and batch.kl.input_ids.tolist() == [[1, 2, 6, 7, 8, 9, 10], [5, 3, 4, 0, 0, 0, 0]]
    assert batch.kl.labels.tolist()[1] == [-100, 3, 4, -100, -100, -100, -100]
    assert _kto_batch(chunk, [0, 1], None, "cpu", kl=False).kl is None  # apo_zero_unpaired: KTOTrainer builds none


def test_kto_apo_zero_unpaired_writes_the_undesirable_loss_as_the_trainer_does():
    """σ(βr) for an undesirable row (KTOTrainer), not 1 - σ(-βr): equal in value, not in its fp32 gradient's bits."""
    from mldebug_cli.probe.losses import _kto

    ratios = torch.tensor([0.37, -1.93, 2.41, -0.07], requires_grad=True)
    logps = torch.zeros(4, 1)
    seq = Sequences(logps, torch.ones(4, 1, dtype=torch.bool), [0, 1, 2, 3])
    seq.desirable = torch.tensor([True, False, True, False])
    params = LossParams(beta=0.7, loss_type="apo_zero_unpaired", desirable_weight=1.5)
    reference = torch.zeros(4, 1)
    seq.logps = ratios.unsqueeze(-1)
    value = _kto(seq, reference, params)
    value.loss.backward()
    got = ratios.grad.clone()
    ratios.grad = None
    chosen, rejected = ratios[[0, 2]], ratios[[1, 3]]
    expected_loss = torch.cat((1.5 * (1 - torch.sigmoid(0.7 * chosen)), 1.0 * torch.sigmoid(0.7 * rejected))).nanmean()
    expected_loss.backward()
    assert torch.equal(got, ratios.grad)
