"""Models, text and tokenizer shared by the real-job workloads.

* ``TransformerLM``: a decoder-only transformer (GPT-style blocks written out, causal
  ``scaled_dot_product_attention`` where torch has it, else the same maths by hand);
  ``TransformerClassifier``: the same blocks, bidirectional, mean-pooled, for the inference job.
* ``TextGenerator``: English-like text made on the fly (Zipf-distributed pseudo-words, sentences
  with punctuation and numbers), so nothing is downloaded.
* ``BytePairTokenizer``: a byte-level BPE trained at start-up on generated text and applied in
  the DataLoader workers, in plain Python (as slow tokenizers are), with an optional per-word
  cache (GPT-2 style); ``TokenStream``: an ``IterableDataset`` of token windows built from it.

Only APIs present in both torch 1.13 and 2.x are used.
"""
from __future__ import annotations

import math
import random
import re
from collections import Counter, defaultdict
from typing import Dict, Iterator, List, Optional, Tuple

from _jobs import torch

import torch.nn as nn
import torch.nn.functional as F

# --------------------------------------------------------------------------------------------
# Transformer
# --------------------------------------------------------------------------------------------


def attention(q: "torch.Tensor", k: "torch.Tensor", v: "torch.Tensor", causal: bool) -> "torch.Tensor":
    """Scaled dot-product attention over (batch, heads, time, head_dim)."""
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    if sdpa is not None:
        return sdpa(q, k, v, is_causal=causal)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        t = q.shape[-2]
        mask = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return scores.softmax(dim=-1) @ v


class Block(nn.Module):
    """Pre-norm transformer block: attention, then a 4x GELU MLP, each with a residual."""

    def __init__(self, width: int, heads: int, causal: bool) -> None:
        super().__init__()
        self.heads = heads
        self.causal = causal
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.out = nn.Linear(4 * width, width)

    def forward(self, x: "torch.Tensor") -> "torch.Tensor":
        b, t, d = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        y = attention(q, k, v, self.causal).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


def init_weights(model: nn.Module) -> None:
    """GPT-2's initialisation: normal(0, 0.02) weights, zero biases."""
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)


class TransformerLM(nn.Module):
    """Token and position embeddings, ``layers`` causal blocks, a tied output head."""

    def __init__(self, vocab: int, width: int, layers: int, heads: int, context: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads, causal=True) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tok.weight
        init_weights(self)

    def forward(self, idx: "torch.Tensor") -> "torch.Tensor":
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def loss(self, tokens: "torch.Tensor") -> Tuple["torch.Tensor", "torch.Tensor"]:
        """Next-token cross-entropy of a (batch, context + 1) window; returns (loss, logits)."""
        logits = self(tokens[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                               tokens[:, 1:].reshape(-1))
        return loss, logits


class TransformerClassifier(nn.Module):
    """Bidirectional blocks over token ids, mean-pooled into ``classes`` logits."""

    def __init__(self, vocab: int, width: int, layers: int, heads: int, context: int,
                 classes: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads, causal=False) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)
        init_weights(self)

    def forward(self, idx: "torch.Tensor") -> "torch.Tensor":
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x).mean(dim=1))


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def make_adamw(model: nn.Module, lr: float = 3e-4) -> "torch.optim.Optimizer":
    return torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1)


# --------------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------------

_ONSETS = ["", "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v",
           "w", "st", "tr", "pl", "gr", "ch", "sh", "th", "br", "cl"]
_VOWELS = ["a", "e", "i", "o", "u", "ea", "ou", "ai", "io"]
_CODAS = ["", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "ck"]


class TextGenerator:
    """English-like text: ``words`` pseudo-words drawn with Zipf weights into sentences."""

    def __init__(self, seed: int, words: int = 3000) -> None:
        vocab_rng = random.Random(12345)  # the same vocabulary in every process
        seen = set()
        self.words: List[str] = []
        while len(self.words) < words:
            syllables = vocab_rng.choice((1, 1, 2, 2, 2, 3, 3, 4))
            word = "".join(vocab_rng.choice(_ONSETS) + vocab_rng.choice(_VOWELS) +
                           vocab_rng.choice(_CODAS) for _ in range(syllables))
            if word not in seen:
                seen.add(word)
                self.words.append(word)
        total = 0.0
        self.cum_weights: List[float] = []
        for rank in range(1, words + 1):
            total += 1.0 / rank ** 1.07
            self.cum_weights.append(total)
        self.rng = random.Random(seed)

    def sentence(self) -> str:
        n = self.rng.randint(4, 22)
        words = self.rng.choices(self.words, cum_weights=self.cum_weights, k=n)
        if self.rng.random() < 0.15:
            words.insert(self.rng.randrange(n), str(self.rng.randint(2, 2099)))
        if self.rng.random() < 0.25:
            cut = self.rng.randrange(1, len(words))
            words[cut - 1] += ","
        text = " ".join(words)
        return text[0].upper() + text[1:] + self.rng.choice((".", ".", ".", "?", "!"))

    def text(self, chars: int) -> str:
        parts: List[str] = []
        size = 0
        while size < chars:
            s = self.sentence()
            parts.append(s)
            size += len(s) + 1
            if self.rng.random() < 0.1:
                parts.append("\n")
        return " ".join(parts)


# --------------------------------------------------------------------------------------------
# Byte-level BPE
# --------------------------------------------------------------------------------------------

_PRETOKENIZE = re.compile(r" ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+")


def _merge(word: List[int], pair: Tuple[int, int], new_id: int) -> List[int]:
    out: List[int] = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == pair[0] and word[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


class BytePairTokenizer:
    """Byte-level BPE: 256 byte tokens plus ``merges`` learned pairs.

    ``train(text, merges)`` learns the merges from word counts (pair counts updated only for the
    words a merge touches); ``encode(text)`` splits the text into words GPT-2 style and applies
    the merges in rank order to each word, remembering each word's tokens when ``cache`` is on.
    """

    def __init__(self, ranks: Dict[Tuple[int, int], int], cache: bool = True) -> None:
        self.ranks = ranks
        self.vocab_size = 256 + len(ranks)
        self.use_cache = cache
        self.cache: Dict[str, List[int]] = {}

    @classmethod
    def train(cls, text: str, merges: int, cache: bool = True) -> "BytePairTokenizer":
        counts = Counter(_PRETOKENIZE.findall(text))
        words = [list(w.encode("utf-8")) for w in counts]
        freqs = list(counts.values())
        pair_counts: Counter = Counter()
        where: Dict[Tuple[int, int], set] = defaultdict(set)
        for i, word in enumerate(words):
            for pair in zip(word, word[1:]):
                pair_counts[pair] += freqs[i]
                where[pair].add(i)
        ranks: Dict[Tuple[int, int], int] = {}
        for rank in range(merges):
            if not pair_counts:
                break
            best = max(pair_counts, key=pair_counts.__getitem__)
            if pair_counts[best] < 2:
                break
            ranks[best] = rank
            new_id = 256 + rank
            touched = set()
            for i in where.pop(best, ()):
                old = words[i]
                for pair in zip(old, old[1:]):
                    pair_counts[pair] -= freqs[i]
                    touched.add(pair)
                new = _merge(old, best, new_id)
                words[i] = new
                for pair in zip(new, new[1:]):
                    pair_counts[pair] += freqs[i]
                    where[pair].add(i)
                    touched.add(pair)
            for pair in touched:
                if pair_counts.get(pair, 0) <= 0:
                    pair_counts.pop(pair, None)
        return cls(ranks, cache)

    def _encode_word(self, word: str) -> List[int]:
        ids = list(word.encode("utf-8"))
        while len(ids) > 1:
            best_rank: Optional[int] = None
            best_pair = (0, 0)
            for pair in zip(ids, ids[1:]):
                rank = self.ranks.get(pair)
                if rank is not None and (best_rank is None or rank < best_rank):
                    best_rank = rank
                    best_pair = pair
            if best_rank is None:
                break
            ids = _merge(ids, best_pair, 256 + best_rank)
        return ids

    def encode(self, text: str) -> List[int]:
        out: List[int] = []
        for word in _PRETOKENIZE.findall(text):
            if self.use_cache:
                ids = self.cache.get(word)
                if ids is None:
                    ids = self._encode_word(word)
                    if len(self.cache) < 200_000:
                        self.cache[word] = ids
            else:
                ids = self._encode_word(word)
            out.extend(ids)
        return out


def train_tokenizer(merges: int, cache: bool = True, chars: int = 120_000) -> BytePairTokenizer:
    """A tokenizer trained on ``chars`` characters of generated text (about 0.3 s at 512 merges)."""
    return BytePairTokenizer.train(TextGenerator(seed=7).text(chars), merges, cache)


class TokenStream(torch.utils.data.IterableDataset):
    """Endless windows of ``context + 1`` token ids, tokenized on the fly from generated text.

    Each DataLoader worker draws its own text (seeded by ``seed`` and the worker id).
    ``repeat_work`` > 1 tokenizes each chunk of text that many times (a stand-in for heavier
    per-sample preprocessing: normalization, filtering, a second tokenizer for a check).
    """

    def __init__(self, tokenizer: BytePairTokenizer, context: int, seed: int,
                 repeat_work: int = 1) -> None:
        super().__init__()
        self.tokenizer = tokenizer
        self.context = context
        self.seed = seed
        self.repeat_work = max(1, repeat_work)

    def __iter__(self) -> Iterator["torch.Tensor"]:
        info = torch.utils.data.get_worker_info()
        worker = info.id if info is not None else 0
        text = TextGenerator(seed=self.seed * 1000 + worker)
        buffer: List[int] = []
        need = self.context + 1
        chars = need * 4
        while True:
            while len(buffer) < need:
                chunk = text.text(chars)
                ids = self.tokenizer.encode(chunk)
                for _ in range(self.repeat_work - 1):
                    ids = self.tokenizer.encode(chunk)
                buffer.extend(ids)
            window, buffer = buffer[:need], buffer[need:]
            yield torch.tensor(window, dtype=torch.long)


# --------------------------------------------------------------------------------------------
# A training loop on device-resident data
# --------------------------------------------------------------------------------------------


class LmTrainer:
    """A ``TransformerLM`` with AdamW and a small dataset of token windows already on the
    device (for jobs whose point is not the input pipeline): ``step(tokens)`` runs one
    bf16-autocast training step and returns (loss, logits)."""

    def __init__(self, job: "object", vocab: int, width: int, layers: int, heads: int,
                 context: int, batch: int, lr: float = 3e-4, batches: int = 32) -> None:
        self.job = job
        self.model = TransformerLM(vocab, width, layers, heads, context).to(job.device)
        self.optimizer = make_adamw(self.model, lr)
        self.data = torch.randint(0, vocab, (batches, batch, context + 1), device=job.device)

    def batch(self, step: int) -> "torch.Tensor":
        return self.data[step % self.data.shape[0]]

    def step(self, tokens: "torch.Tensor") -> Tuple["torch.Tensor", "torch.Tensor"]:
        with self.job.autocast():
            loss, logits = self.model.loss(tokens)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        return loss, logits

    def state(self) -> dict:
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}

    def parameters(self) -> int:
        return parameter_count(self.model)
