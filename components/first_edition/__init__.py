"""The first edition of FOCAL++, opt-in: the encoders this project built FOCAL++ from before the
paper's attention blocks (components/encoders/attention_blocks.py) — a B·softmax batch gate
(`batch_gate`), PyTorch's post-norm transformer along a transition's tokens
(`sequence_attention`) and two whole encoders added at the output (`parallel_encoder`). Nothing
that ships imports them; a recipe of recipes/first_edition/ does (`import
components.first_edition`), and so does `--plugin components.first_edition`. Their sizes at each
scale: recipes/first_edition/scales/."""

import components.first_edition.batch_gate
import components.first_edition.parallel_encoder
import components.first_edition.sequence_attention  # noqa: F401
