"""The streaming protocols of exec, attach and port-forward, spoken on a connection the HTTP
layer has upgraded (`http/messages.py`, `Upgraded`).

`runtime.py` is what the server asks of the node that runs the containers (a development
cluster registers one); `websocket.py` is the channel protocol over WebSockets
(`v5.channel.k8s.io` and its predecessors, `portforward.k8s.io`'s channels) on wsproto;
`spdyframes.py` and `spdysession.py` are SPDY/3.1 as kubectl and client-go speak it (decision
0049); `remotecommand.py` runs exec and attach, and `portforward.py` port forwarding, on
either of them; `negotiation.py` picks the protocol a request asks for.
"""
