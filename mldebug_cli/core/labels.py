"""The one label value every layer shares."""

IGNORE_INDEX = -100  # the label torch.nn.CrossEntropyLoss skips: a token that is not trained
