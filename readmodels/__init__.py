"""Read models: the tables projected from the log and the questions they answer."""

from apexmem.readmodels.communities import CommunityMember, CommunityRow, list_communities
from apexmem.readmodels.entities import all_entities, entity_groups, find_entities, names_of
from apexmem.readmodels.episodes import EpisodeRow, episodes_of
from apexmem.readmodels.facts import edge_history, facts_about, facts_of, known, slots_of, valid
from apexmem.readmodels.ports import ReadModels
from apexmem.readmodels.rows import (
    EntityHit,
    EntityRow,
    FactHit,
    FactRow,
    GraphStats,
    MessageHit,
    Reached,
    Subgraph,
)
from apexmem.readmodels.search import search_entities, search_facts, search_messages
from apexmem.readmodels.stats import graph_stats
from apexmem.readmodels.store import ReadModelStore, dump, tracked_position
from apexmem.readmodels.traverse import traverse_from

__all__ = [
    "CommunityMember",
    "CommunityRow",
    "EntityHit",
    "EntityRow",
    "EpisodeRow",
    "FactHit",
    "FactRow",
    "GraphStats",
    "MessageHit",
    "Reached",
    "ReadModelStore",
    "ReadModels",
    "Subgraph",
    "all_entities",
    "dump",
    "edge_history",
    "entity_groups",
    "episodes_of",
    "facts_about",
    "facts_of",
    "find_entities",
    "graph_stats",
    "known",
    "list_communities",
    "names_of",
    "search_entities",
    "search_facts",
    "search_messages",
    "slots_of",
    "tracked_position",
    "traverse_from",
    "valid",
]
