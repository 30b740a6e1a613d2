"""maps-autogen: the MAPS multi-agent method for multimodal scientific problems, on AG2."""

__version__ = "0.1.0"
