"""Topics against a real `sluice serve`."""

from __future__ import annotations

import pytest

from sluice import InvalidArgument, QueueInUse, QueueNotFound, Sluice, Topic, TopicExists, TopicNotFound

from conftest import new_name


def test_topics_fan_out_with_filters(client: Sluice) -> None:
    billing, shipping, topic = new_name("bill"), new_name("ship"), new_name("t")
    client.queues.create(billing)
    client.queues.create(shipping)
    try:
        t = client.topics.create(topic)
        assert isinstance(t, Topic) and t.name == topic and t.subscriptions == []
        with pytest.raises(TopicExists):
            client.topics.create(topic)
        client.topics.subscribe(topic, billing, {"type": "order"})
        t = client.topics.subscribe(topic, shipping)
        subs = {s.queue: s for s in t.subscriptions}
        assert subs[billing].filter == {"type": "order"} and subs[shipping].filter is None
        assert subs[billing].source == "api"
        assert client.topics.publish(topic, {"n": 1}) == 1
        assert client.topics.publish(topic, "text", delay=30) == 1
        assert client.topics.publish(topic, [1, 2]) == [1, 1]
        assert client.topics.publish_entries(topic, [{"body": {"n": 2}, "headers": {"type": "order"}}]) == [2]
        assert len(client.mq.peek(billing)) == 1
        assert any(x.name == topic for x in client.topics.list())

        with pytest.raises(TopicNotFound):
            client.topics.publish(new_name("none"), {})
        with pytest.raises(QueueNotFound):
            client.topics.subscribe(topic, new_name("none"))
        with pytest.raises(InvalidArgument):
            client.topics.subscribe(topic, billing, {"type": 1})  # type: ignore[dict-item]
        with pytest.raises(InvalidArgument):
            client.topics.publish_entries(topic, [])

        client.topics.unsubscribe(topic, shipping)
        assert [s.queue for s in client.topics.get(topic).subscriptions] == [billing]
        client.topics.delete(topic)
        with pytest.raises(TopicNotFound):
            client.topics.get(topic)
    finally:
        client.queues.delete(billing)
        client.queues.delete(shipping)


def test_dead_letter_queue_setting(client: Sluice) -> None:
    dead, work = new_name("dead"), new_name("work")
    client.queues.create(dead)
    try:
        q = client.queues.create(work, dead_letter_queue=dead)
        assert q.dead_letter_queue == dead
        assert client.queues.get(work).dead_letter_queue == dead
        with pytest.raises(QueueInUse) as refused:
            client.queues.delete(dead)
        assert refused.value.status == 409 and work in str(refused.value)
        with pytest.raises(InvalidArgument):
            client.queues.update(work, dead_letter_queue=work)
        with pytest.raises(InvalidArgument):
            client.queues.update(work, dead_letter_queue=new_name("missing"))
        assert client.queues.update(work, dead_letter_queue="").dead_letter_queue is None
    finally:
        client.queues.delete(work)
        client.queues.delete(dead)
