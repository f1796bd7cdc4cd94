"""The survey's taxonomy: validated nodes, their descriptions, and a graph of nodes and works."""
from taxonomy.errors import DataError
from taxonomy.graph import AtlasGraph
from taxonomy.schema import DIMENSIONS, Node
from taxonomy.tree import Taxonomy

__all__ = ["AtlasGraph", "DIMENSIONS", "DataError", "Node", "Taxonomy"]
