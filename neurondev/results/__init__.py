"""The public results, composed: the data a pipeline made, with the displays and widgets of the layers below."""
