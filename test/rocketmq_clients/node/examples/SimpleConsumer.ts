/**
 * Licensed to the Apache Software Foundation (ASF) under one or more
 * contributor license agreements.  See the NOTICE file distributed with
 * this work for additional information regarding copyright ownership.
 * The ASF licenses this file to You under the Apache License, Version 2.0
 * (the "License"); you may not use this file except in compliance with
 * the License.  You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */

import { SimpleConsumer } from '../src';

import { topics, endpoints, sessionCredentials, namespace, tag, consumerGroup } from './ProducerSingleton';


(async () => {
  const simpleConsumer = new SimpleConsumer({
    consumerGroup,
    endpoints,
    namespace,
    sessionCredentials,
    subscriptions: new Map().set(topics.normal, tag),
    awaitDuration: 3000,
  });
  await simpleConsumer.startup();

  const messages = await simpleConsumer.receive(20);
  console.log('got %d messages', messages.length);
  for (const message of messages) {
    console.log(message);
    console.log('body=%o', message.body.toString());
    await simpleConsumer.ack(message);
  }
})();
